"""make bench's measuring, which make sweep, overload, map and recommend share: one scenario's targets verified,
warmed up and loaded while their processes are sampled (measure.py), each into one typed record built as it is measured
(record.py), and the tables and charts of those records (render.py, with rows.py's medians of the repeats). Above the
measuring machinery and the renderers' shared drawing, below the modes that run it."""
