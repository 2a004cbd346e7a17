"""The image adapters read each image through the content layer's door at build time: a
truncated PNG (its header readable, its pixels not) and a forged 65535 x 65535 header are
counted as not covered by the adapter, so the build goes on without them instead of stopping
at the perceptual hash."""

from __future__ import annotations

from test_fuzz_content import _forged_png, _png

from membench.sources.tabmwp import read_images


def test_truncated_and_bomb_images_are_unreadable_not_a_stop(tmp_path):
    good = _png()
    (tmp_path / "good.png").write_bytes(good)
    (tmp_path / "cut.png").write_bytes(good[: len(good) - 30])
    (tmp_path / "bomb.png").write_bytes(_forged_png(65535, 65535))
    (tmp_path / "junk.png").write_bytes(b"not a png at all")
    metas, unreadable = read_images(sorted(tmp_path.glob("*.png")), lambda p: p.stem)
    assert set(metas) == {"good"} and metas["good"]["width"] == 24
    assert unreadable == {"cut", "bomb", "junk"}
