"""The operating-point rule (membench calibrate and the threshold sweep use it)."""

from __future__ import annotations

import pytest

from membench.analysis.operating_point import choose_threshold


def calibrate(*args, **kw) -> float:
    return choose_threshold(*args, **kw).threshold


def test_calibrate_respects_the_false_recall_target():
    ans = [0.9, 0.8, 0.7, 0.6, 0.2]
    unans = [0.65, 0.3, 0.1, 0.05, 0, 0, 0, 0, 0, 0]
    # t=0.2 has the best J (1.0 - 0.2) but 20% false recall; t=0.6: TPR .8, FPR .1, J .7
    c = choose_threshold(ans, unans)
    # written as the midpoint to the next lower observed score: 0.6 -> (0.3 + 0.6) / 2
    assert (c.threshold, c.tpr, c.fpr, c.constrained) == ((0.3 + 0.6) / 2, 0.8, 0.1, True)
    assert c.j == pytest.approx(0.7)
    assert calibrate(ans, unans, max_false_recall=0.2) == (0.1 + 0.2) / 2


def test_calibrate_ties_go_to_the_higher_threshold():
    # t=0.8: J = .5 - 0; t=0.4: J = 1 - .5 (both feasible at 0.5)
    assert calibrate([0.8, 0.4], [0.6, 0.1], max_false_recall=0.5) == (0.6 + 0.8) / 2


def test_calibrate_when_the_target_is_unachievable():
    # every threshold that admits an answerable query admits all unanswerable ones
    c = choose_threshold([0.3, 0.2], [0.9, 0.8, 0.7])
    assert not c.constrained
    assert c.threshold == 0.9 + 1e-6  # "always abstain": J=0 ties with t=0.2; higher wins
    assert c.tpr == 0 and c.fpr == 0


def test_calibrate_handles_queries_without_hits_and_is_deterministic():
    assert calibrate([None, 0.5], [None]) == 0.5 - 1e-6  # nothing lower observed
    assert calibrate([0.5, None], [None]) == calibrate([None, 0.5], [None])
    assert calibrate([0.7, 0.9], []) == 0.7 - 1e-6
    with pytest.raises(ValueError):
        calibrate([None], [None])
    with pytest.raises(ValueError):
        calibrate([float("nan")], [0.1])


def test_calibrate_leaves_out_a_modality_without_unanswerable_queries(tmp_path):
    """The fixture run's conversation modality has answerable queries only: every threshold
    would look free of false recalls, so it is reported as not calibrated, not fitted."""
    import shutil
    from pathlib import Path

    from membench.analysis.calibrate import calibrate_run

    run = tmp_path / "run"
    shutil.copytree(Path(__file__).parent / "fixtures" / "metrics" / "run_small", run)
    cal = calibrate_run(run)
    assert set(cal["modalities"]) == {"pdf"}
    assert "0 audited unanswerable" in cal["not_calibrated"]["conversation"]


def test_the_threshold_keeps_every_calibration_query_on_its_side_with_room():
    """The midpoint leaves TPR and FPR as the chosen score gives them, and no observed score
    within half the gap: a score moved by float rounding (1e-7) cannot cross it."""
    import random

    rng = random.Random(7)
    for _ in range(200):
        ans = [rng.random() for _ in range(rng.randint(1, 30))]
        unans = [rng.random() * 0.8 for _ in range(rng.randint(1, 30))]
        c = choose_threshold(ans, unans)
        assert c.tpr == sum(s >= c.threshold for s in ans) / len(ans)
        assert c.fpr == sum(s >= c.threshold for s in unans) / len(unans)
        moved_a = [s + rng.choice([-1e-7, 1e-7]) for s in ans]
        moved_u = [s + rng.choice([-1e-7, 1e-7]) for s in unans]
        gap = min(abs(s - c.threshold) for s in ans + unans)
        if gap > 1e-7:
            assert sum(s >= c.threshold for s in moved_a) / len(ans) == c.tpr
            assert sum(s >= c.threshold for s in moved_u) / len(unans) == c.fpr
