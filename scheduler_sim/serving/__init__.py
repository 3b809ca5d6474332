"""LLM serving: a continuous-batching engine with a roofline step model, and its glue to the facility run."""
