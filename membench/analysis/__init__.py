"""Scores -> understanding: the item frame (:mod:`.frames`), slices (:mod:`.slices`),
the threshold sweep and the one operating-point rule (:mod:`.sweep`, :mod:`.operating_point`),
cartridge calibration (:mod:`.calibrate`), run summaries (:mod:`.summaries`; their plots are
:mod:`membench.report.plots`), paired comparison (:mod:`.compare`), agreement between judgment
sets (:mod:`.agreement`), the failure browser (:mod:`.browse`), the frozen figures
(:mod:`.expected`), the labels of the two false-recall columns (:mod:`.tell_columns`), the
leaderboard (:mod:`.leaderboard`: store, ranking, tables) and its verification
(:mod:`.verify`), pools and the Q2D-Web experiment (:mod:`.pool`, :mod:`.q2d`). Reads run directories through
:class:`membench.metrics.rundir.RunDir`; writes nothing but ``bench/calibration`` and
``bench/expected`` when asked."""
