"""Near-duplicate evidence: perceptual hashes for pictures, normalised text elsewhere."""

from __future__ import annotations

from PIL import Image, ImageDraw

from membench.sets.neardup import (
    PHASH_MAX_DISTANCE,
    NearDupIndex,
    PhashCache,
    hamming,
    image_hashes,
    normalise,
    shingles,
)


def chart(path, bars, size=(320, 200)):
    im = Image.new("RGB", size, "white")
    d = ImageDraw.Draw(im)
    w = size[0] // (len(bars) + 1)
    for i, h in enumerate(bars):
        d.rectangle([w * (i + 0.5), size[1] - h, w * (i + 1.2), size[1] - 1], fill=(30, 60, 200))
    im.save(path, "PNG")
    return path


def test_normalise_and_shingles():
    assert normalise("  Hello,   WORLD!\n-- it's_here ") == "hello world it s here"
    a = shingles("one two three four five six")
    assert len(a) == 2 and shingles("ONE two, three four five six") == a
    assert len(shingles("just three words")) == 1 and shingles("") == frozenset()


def test_same_chart_resaved_is_a_near_duplicate_another_is_not(tmp_path):
    paths = {
        "a": chart(tmp_path / "a.png", [150, 90, 120, 60, 180]),
        "c": chart(tmp_path / "c.png", [20, 190, 40, 170, 10]),
    }
    with Image.open(paths["a"]) as im:  # the same chart, larger, saved as JPEG
        im.resize((480, 300)).save(tmp_path / "b.jpg", "JPEG", quality=80)
    paths["b"] = tmp_path / "b.jpg"
    cache = PhashCache(tmp_path / "phash.sqlite3")
    h = image_hashes(paths, cache=cache)
    assert hamming(h["a"], h["b"]) <= PHASH_MAX_DISTANCE < hamming(h["a"], h["c"])
    idx = NearDupIndex(phash=h)
    assert idx.duplicates(idx.evidence("a"), ["a", "c", "b"]) == "b"
    assert idx.duplicates(idx.evidence("a"), ["a", "c"]) is None


def test_hashes_are_cached_by_content_digest(tmp_path):
    p = chart(tmp_path / "x.png", [10, 20, 30])
    cache = PhashCache(tmp_path / "c.sqlite3")
    first = image_hashes({"x": p}, {"x": "d" * 64}, cache=cache)
    p.unlink()  # gone: only the cache can answer now
    assert image_hashes({"x": p}, {"x": "d" * 64}, cache=cache) == first


def test_text_regions_and_whole_items():
    page = "Revenue of the Zephyr turbine division grew by 14 percent in the third quarter"
    idx = NearDupIndex(
        {
            "gold": "cover\f" + page,
            "copy": "some other report quoting: " + page.upper() + " and more",
            "other": "an unrelated document about gardening and tomatoes in summer",
            "track": "a b c d e f g h i j k l m n o p q r s t",
            "track2": "x a b c d e f g h i j k l m n o p q r s t y",
        }
    )
    ev = idx.evidence("gold", [page])
    assert ev.region_texts and not ev.shingles
    assert idx.duplicates(ev, ["gold", "other", "copy"]) == "copy"
    assert idx.duplicates(ev, ["other"]) is None
    short = idx.evidence("gold", ["too short"])  # under MIN_REGION_CHARS: whole item
    assert not short.region_texts and short.shingles
    whole = idx.evidence("track")  # no region text: 5-gram containment
    assert idx.duplicates(whole, ["other", "track2"]) == "track2"
