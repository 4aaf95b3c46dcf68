"""Every image input a metric accepts (path, URL, bytes, PIL image) opens as the same RGB image;
an unreadable one is an error naming the item, the field and the image."""
import pytest
from PIL import Image

from opik_metrics.core import MetricInputError
from opik_metrics.images import ImageFetcher, open_image, open_images
from tests.pipelines.caption_fixtures import image_server, jpeg_bytes  # noqa: F401


def test_path_bytes_pil_and_url_give_the_same_pixels(tmp_path, image_server):
    data = jpeg_bytes((200, 40, 10), size=(40, 30))
    path = tmp_path / "a.jpg"
    path.write_bytes(data)
    image_server.routes["/img/same.jpg"] = (200, {"Content-Type": "image/jpeg"}, data, 0.0)
    fetcher = ImageFetcher(tmp_path / "cache", timeout=1.0, retries=0)
    from_pil = Image.open(path)
    opened = [open_image(x, fetcher=fetcher) for x in (str(path), path, data, from_pil,
                                                         image_server.url("/img/same.jpg"))]
    assert all(im.mode == "RGB" and im.size == (40, 30) for im in opened)
    assert len({im.tobytes() for im in opened}) == 1


def test_open_images_keeps_order_and_names_the_bad_item(tmp_path, image_server):
    fetcher = ImageFetcher(tmp_path / "cache", timeout=1.0, retries=0)
    good = image_server.url("/img/red.jpg")
    assert len(open_images([good, good], fetcher=fetcher)) == 2
    with pytest.raises(MetricInputError, match=r"item 1, field 'image': cannot read image .*/img/fake.jpg: not an image"):
        open_images([good, image_server.url("/img/fake.jpg")], fetcher=fetcher)


@pytest.mark.parametrize("bad, message", [
    (None, "got None"), ("", "got an empty string"), (3, "got int"),
    ("/no/such/file.jpg", "cannot read image /no/such/file.jpg: no such file"),
    (b"not an image", "cannot read image <12 bytes>: not an image"),
])
def test_bad_inputs_say_what_and_where(bad, message):
    with pytest.raises(MetricInputError, match=rf"item 4, field 'img'.*{message}"):
        open_image(bad, field="img", item=4)


def test_a_directory_is_not_an_image(tmp_path):
    with pytest.raises(MetricInputError, match="not a file"):
        open_image(str(tmp_path))


@pytest.mark.parametrize("url, scheme", [("file:///etc/passwd", "file"), ("FTP://127.0.0.1/x.jpg", "ftp")])
def test_a_url_of_another_scheme_is_named_as_such(url, scheme):
    with pytest.raises(MetricInputError, match=f"{scheme}:// URLs are not read; give an http"):
        open_image(url)
