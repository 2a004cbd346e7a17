"""Stage 4, scores -> understanding: the item frame (:mod:`.frames`), slices (:mod:`.slices`),
the threshold sweep and the one operating-point rule (:mod:`.sweep`, :mod:`.operating_point`),
cartridge calibration (:mod:`.calibrate`), run summaries and plots (:mod:`.summaries`,
:mod:`.plots`), paired comparison (:mod:`.compare`), the failure browser (:mod:`.browse`),
the frozen figures (:mod:`.expected`) and the labels of the two false-recall columns
(:mod:`.tell_columns`). Reads run directories through
:class:`membench.metrics.rundir.RunDir`; writes nothing but ``bench/calibration`` and
``bench/expected`` when asked."""
