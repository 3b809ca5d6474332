"""Run files: the HDF5 writer and readers of the versioned output schema (:mod:`.hdf5`; docs/output_schema.md).

Imports the kernel, policies and serving layers (for what a result holds), never the analysis or app layers: the
application computes the attribution and hands it to :func:`.hdf5.write_run`.
"""
