"""The I/O layer: every read and write of the warehouse, the label store, the landing zone, the LLM server
and the export folder. Assets (above) call it; models/ (below) never do."""
