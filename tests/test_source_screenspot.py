import json
import shutil

import pytest
from PIL import Image

from membench.core.errors import InputError
from membench.modalities import check_region
from membench.sources import BY_KEY, screenspot

SPEC = BY_KEY["screenspot"]


@pytest.fixture(scope="module")
def real(corpus_root):
    return screenspot.load(corpus_root)


@pytest.fixture(scope="module")
def fx(fixtures):
    return screenspot.load(fixtures / "screenspot")


def _drafts(res):
    return {d.query_id: d for d in res.drafts}


# --------------------------------------------------------------------------- real corpus


def test_real_counts(real):
    cov = real.coverage
    assert cov.upstream_items == 334 + 501 + 437 == 1272
    assert cov.covered == 17 == len(real.drafts)
    assert cov.not_covered == {"screenshot not in mirror": 1255}
    assert cov.normalised == {}
    assert cov.balanced()
    assert len(real.items) == 6
    assert {i.holder for i in real.items} == {
        "screenspot/desktop",
        "screenspot/mobile",
        "screenspot/web",
    }
    per = {}
    for d in real.drafts:
        per[d.scope.holder] = per.get(d.scope.holder, 0) + 1
    assert per == {"screenspot/desktop": 2, "screenspot/mobile": 9, "screenspot/web": 6}
    assert not any(d.unanswerable for d in real.drafts)
    # a screenshot's text is the upstream instructions over it (for the anchor guard only)
    assert sorted(real.texts) == sorted({d.gold[0].source_id for d in real.drafts})
    assert sum(len(t.split("\n")) for t in real.texts.values()) == len(real.drafts)


def test_real_notes(real):
    notes = " | ".join(real.coverage.notes)
    assert "6 of 730 screenshots mirrored" in notes
    assert "2 byte-identical, 4 matched by content" in notes
    assert "records on them: 4 byte-identical, 13 content-matched" in notes
    # with_image_size agrees with the conversion everywhere; one upstream box of a screenshot
    # we do not have is 1 px wider than its stated image
    assert (
        "1272 rows compared; disagreements: row order/identity 0, xyxy box 0, "
        "ui_type/platform 0, image size vs mirrored PNG 0, file length 0"
    ) in notes
    assert "outside their stated image size: 1 (screenspot_mobile_v2.json#449)" in notes


def test_real_hand_checked(real, corpus_root):
    d = _drafts(real)
    # screenspot_desktop_v2.json row 246: bbox [1054, 211, 156, 81]
    r = d["screenspot:desktop:246"]
    assert r.question == "get the bear markdown notes app"
    assert r.gold[0].source_id == "screenspot:pc_8be15b4a-65cc-4e89-94a2-3b6b571f41e2.png"
    assert r.gold[0].region == {"bbox": [1054, 211, 1210, 292]}
    assert r.scope.holder == "screenspot/desktop" and r.scope.scenario == SPEC.scenario
    assert r.origin.item == "screenspot_desktop_v2.json#246"
    assert r.origin.revision == "841fea75e36804d0977fe15bc546f0de0e3591f2"
    assert r.origin.dataset == "OS-Copilot/ScreenSpot-v2" and r.origin.license == SPEC.license
    assert "data_type=icon" in r.origin.notes and "not proven byte-identical" in r.origin.notes
    assert r.answer is None and r.answer_format == "none"
    # mobile row 13: bbox [1873, 61, 453, 80]
    r = d["screenspot:mobile:13"]
    assert r.question == "search event"
    assert r.gold[0].region == {"bbox": [1873, 61, 2326, 141]}
    # web row 294 is on a byte-identical screenshot
    r = d["screenspot:web:294"]
    assert r.question == "enter the wikipedia page of champions league"
    assert r.gold[0].source_id == "screenspot:web_dfacd48d-d2c2-492f-b94c-41e6a34ea99f.png"
    assert r.gold[0].region == {"bbox": [1000, 1305, 1322, 1351]}
    assert "byte-identical to the benchmark image" in r.origin.notes
    assert "not proven" not in r.origin.notes
    # an instruction on a screenshot that is not mirrored has no record
    assert "screenspot:desktop:0" not in d


def test_real_items_and_bounds(real, corpus_root):
    items = {i.source_id: i for i in real.items}
    assert [i.source_id for i in real.items] == sorted(items)
    for it in real.items:
        assert it.path.startswith("screenspot-v2/screenspotv2_image/")
        with Image.open(corpus_root / it.path) as im:
            assert (it.meta["width"], it.meta["height"]) == im.size
        assert it.holder == f"screenspot/{it.meta['platform']}"
        assert it.observed_at.tzinfo is not None
    assert items["screenspot:mobile_3a1f306e-784a-411a-98cb-f11a2157a5c7.png"].meta == {
        "width": 1170,
        "height": 2532,
        "platform": "mobile",
    }
    for d in real.drafts:
        (g,) = d.gold
        it = items[g.source_id]
        assert it.holder == d.scope.holder
        assert check_region("ui_screenshot", g.region) is None
        x0, y0, x1, y1 = g.region["bbox"]
        assert 0 <= x0 < x1 <= it.meta["width"] and 0 <= y0 < y1 <= it.meta["height"]
    assert [d.query_id for d in real.drafts] == sorted(d.query_id for d in real.drafts)


def test_real_deterministic(real, corpus_root):
    again = screenspot.load(corpus_root)
    assert [i.model_dump() for i in again.items] == [i.model_dump() for i in real.items]
    assert [d.model_dump() for d in again.drafts] == [d.model_dump() for d in real.drafts]
    assert again.coverage.as_dict() == real.coverage.as_dict()


# --------------------------------------------------------------------------- fixture quirks


def test_fixture_counts(fx):
    cov = fx.coverage
    assert cov.upstream_items == 10
    assert cov.covered == 4
    assert cov.not_covered == {
        "bbox outside image": 1,
        "degenerate bbox (zero or negative size)": 1,
        "empty instruction": 1,
        "screenshot not in mirror": 1,
        "unparseable annotation row": 1,
        "unparseable bbox": 1,
    }
    assert cov.normalised == {"bbox clipped to image bounds (<= 1 px)": 1}
    assert cov.balanced()


def test_fixture_regions(fx):
    d = _drafts(fx)
    assert sorted(d) == [
        "screenspot:desktop:0",
        "screenspot:desktop:1",
        "screenspot:mobile:0",
        "screenspot:web:0",
    ]
    assert d["screenspot:desktop:0"].gold[0].region == {"bbox": [10, 20, 40, 60]}
    # off the 200 px wide image by 1 px: clipped
    assert d["screenspot:desktop:1"].gold[0].region == {"bbox": [150, 50, 200, 60]}
    # exactly the whole image is inside
    assert d["screenspot:mobile:0"].gold[0].region == {"bbox": [0, 0, 120, 240]}
    assert d["screenspot:web:0"].origin.revision == "c0ffeeweb"


def test_fixture_crosscheck_counts_disagreement(fx):
    notes = " | ".join(fx.coverage.notes)
    assert "xyxy box 1" in notes
    assert "3 of 4 screenshots mirrored" in notes
    assert "1 byte-identical, 2 matched by content" in notes


def _copy(fixtures, tmp_path):
    dst = tmp_path / "root"
    shutil.copytree(fixtures / "screenspot", dst)
    return dst


def test_missing_annotation_file_raises(fixtures, tmp_path):
    root = _copy(fixtures, tmp_path)
    (root / "screenspot-v2" / "screenspot_web_v2.json").unlink()
    with pytest.raises(InputError) as e:
        screenspot.load(root)
    assert e.value.rule == "MISSING_FILE"


def test_missing_folder_raises(tmp_path):
    with pytest.raises(InputError) as e:
        screenspot.load(tmp_path)
    assert e.value.rule == "MISSING_FILE"


def test_no_sized_copy_and_no_images(fixtures, tmp_path):
    root = _copy(fixtures, tmp_path)
    shutil.rmtree(root / "screenspot-v2" / "with_image_size")
    shutil.rmtree(root / "screenspot-v2" / "screenspotv2_image")
    res = screenspot.load(root)
    assert res.items == [] and res.drafts == []
    assert res.coverage.upstream_items == 10 and res.coverage.balanced()
    assert res.coverage.not_covered == {
        "screenshot not in mirror": 9,
        "unparseable annotation row": 1,
    }
    assert any("absent: no cross-check" in n for n in res.coverage.notes)


def test_unreadable_png_is_reported(fixtures, tmp_path):
    root = _copy(fixtures, tmp_path)
    (root / "screenspot-v2" / "screenspotv2_image" / "web_fix-0003.png").write_bytes(b"nope")
    res = screenspot.load(root)
    assert "screenspot:web_fix-0003.png" not in {i.source_id for i in res.items}
    assert res.coverage.not_covered["screenshot unreadable"] == 2
    assert res.coverage.not_covered["screenshot not in mirror"] == 1
    assert any("unreadable by Pillow" in n for n in res.coverage.notes)
    assert res.coverage.balanced()


def test_fixture_json_is_upstream_shape(fixtures):
    rows = json.loads(
        (fixtures / "screenspot" / "screenspot-v2" / "screenspot_desktop_v2.json").read_text()
    )
    assert set(rows[0]) == {"img_filename", "bbox", "instruction", "data_type", "data_source"}


def test_registry_matches_module():
    assert (SPEC.folder, SPEC.modality, SPEC.scenario, SPEC.license) == (
        screenspot.FOLDER,
        screenspot.MODALITY,
        screenspot.SCENARIO,
        screenspot.LICENSE,
    )
