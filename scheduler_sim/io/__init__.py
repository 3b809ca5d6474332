"""Run files: the output schema table and validator (:mod:`.schema`), the HDF5 writer and readers (:mod:`.hdf5`),
and the generator of docs/output_schema.md (:mod:`.schema_doc`).

Imports the kernel, policies and serving layers (for what a result holds), never the analysis or app layers: the
application computes the attribution and hands it to :func:`.hdf5.write_run`.
"""
