"""Images for metrics and pipelines: robust fetching by URL into a disk cache, and every image
input a metric accepts (path, URL, bytes, PIL image) opened as an upright RGB image."""
from opik_metrics.images.fetch import FetchedImage, ImageFetcher, check_url, decode_image, load_image
from opik_metrics.images.sources import check_image_input, describe_image, is_url, open_image, open_images

__all__ = ["FetchedImage", "ImageFetcher", "check_image_input", "check_url", "decode_image", "describe_image",
           "is_url", "load_image", "open_image", "open_images"]
