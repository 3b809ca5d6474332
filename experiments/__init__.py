"""Studies and their plots: policy studies, power-cap and placement sweeps, LLM serving sweeps, incentives."""
