"""The comparison report rendered by headless chromium: it paints, shows the numbers, and loads every plot."""
from __future__ import annotations

import html
import json
import re
from html.parser import HTMLParser

import pytest
from PIL import Image

from opik_metrics.compare.report.html import fmt_p
from opik_metrics.compare.model import Comparison
from opik_metrics.compare.report.folder import write_report
from tests.compare import browser
from tests.compare.sample_comparison import make_comparison

WIDTH, HEIGHT = 1280, 2400
_PROBE = """<!DOCTYPE html><html><head><meta charset="utf-8"></head><body>{images}<pre id="result"></pre>
<script>
window.addEventListener("load", () => {{
  const found = Array.from(document.images).map(i => [i.getAttribute("src"), i.complete, i.naturalWidth,
                                                      i.naturalHeight]);
  document.getElementById("result").textContent = JSON.stringify(found);
}});
</script></body></html>"""


class VisibleText(HTMLParser):
    """The text a reader sees: outside <style>, <title>, <script> and closed <details>."""

    HIDDEN = {"style", "title", "script", "details"}

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.depth, self.parts = 0, []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        if tag in self.HIDDEN and not (tag == "details" and "open" in dict(attrs)):
            self.depth += 1

    def handle_endtag(self, tag):
        if tag in self.HIDDEN and self.depth:
            self.depth -= 1

    def handle_data(self, data):
        if not self.depth:
            self.parts.append(data)

    @property
    def text(self) -> str:
        return re.sub(r"\s+", " ", " ".join(self.parts))


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    """The three-experiment report, its screenshot and its DOM after chromium loaded it."""
    browser.require_chromium()
    comparison = make_comparison(3)
    out = tmp_path_factory.mktemp("browser") / "report"
    files = write_report(Comparison.from_dict(comparison), out)
    shot = browser.screenshot(files.html, out.parent / "page.png", WIDTH, HEIGHT)
    dom = browser.dump_dom(files.html)
    print(f"screenshot: {shot}")
    return comparison, files, shot, dom


def test_screenshot_is_a_painted_page_of_the_asked_size(rendered):
    _, _, shot, _ = rendered
    with Image.open(shot) as image:
        assert image.format == "PNG" and image.size == (WIDTH, HEIGHT)
        colours = image.convert("RGB").getcolors(maxcolors=WIDTH * HEIGHT)
    assert len(colours) > 1000  # text, tables, badges and plots, not a blank or error page
    most_common = max(count for count, _ in colours)
    assert most_common / (WIDTH * HEIGHT) < 0.95


def test_dom_shows_names_numbers_and_failures(rendered):
    comparison, _, _, dom = rendered
    assert "<script" not in dom.lower()  # the escaped <script> texts stayed text for a real parser
    text = VisibleText(dom).text
    for experiment in comparison["experiments"]:
        assert experiment["name"] in text
    for metric in comparison["metrics"]:
        assert metric["name"] in text
    assert "significant" in text and "not significant" in text and "lower is better" in text
    for pair in comparison["pairs"]:
        for entry in pair["metrics"].values():
            assert fmt_p(entry["p_value"]) in text
    assert "<0.001" in text
    for items in comparison["failed_items"].values():
        for item in items:
            assert item["reason"] in text
    assert "<script>alert('x')</script>" in text


def test_every_image_is_a_loaded_picture(rendered):
    _, files, _, dom = rendered
    sources = re.findall(r'<img src="([^"]+)"', dom)
    assert len(sources) == len(files.plots)
    out = files.html.parent
    for source in sources:
        with Image.open(out / html.unescape(source)) as image:
            image.verify()
    probe = out / "probe.html"  # a scripted twin of the page's images: the report itself has no script
    probe.write_text(_PROBE.format(images="".join(f'<img src="{s}">' for s in sources)), encoding="utf-8")
    result = re.search(r'<pre id="result">(.*?)</pre>', browser.dump_dom(probe), re.S)
    assert result, "the probe page did not run"
    loaded = json.loads(html.unescape(result.group(1)))
    assert [row[0] for row in loaded] == [html.unescape(s) for s in sources]
    for source, complete, width, height in loaded:
        assert complete and (width, height) == (640, 360), source


_WIDTH_PROBE = """<script>
window.addEventListener("load", () => {
  document.querySelectorAll("details").forEach(d => d.open = true);   // folded detail must fit too
  const page = document.documentElement.clientWidth;
  const wide = [];
  for (const el of document.querySelectorAll("body *")) {
    const box = el.getBoundingClientRect();
    if (box.right > page + 0.5 || el.scrollWidth > el.clientWidth + 1 && getComputedStyle(el).overflowX !== "visible")
      wide.push(el.tagName + "." + el.className + " " + Math.round(box.right) + " / " + el.scrollWidth);
  }
  const out = document.createElement("pre");
  out.id = "width-result";
  out.textContent = JSON.stringify({page: page, scroll: document.documentElement.scrollWidth, wide: wide});
  document.body.appendChild(out);
});
</script>"""


def test_every_table_fits_a_1280_px_window_without_scrolling(rendered):
    _, files, _, _ = rendered
    probe = files.html.parent / "width-probe.html"   # the page with a measuring script: the report has none
    probe.write_text(files.html.read_text(encoding="utf-8").replace("</body>", _WIDTH_PROBE + "</body>"),
                     encoding="utf-8")
    dom = browser.dump_dom(probe, width=WIDTH)
    result = json.loads(html.unescape(re.search(r'<pre id="width-result">(.*?)</pre>', dom, re.S).group(1)))
    assert result["page"] == WIDTH and result["scroll"] <= WIDTH
    assert result["wide"] == []
