"""``python -m opik_metrics.pipelines.captioning``: the ``opik-metrics caption`` command on its own."""
import argparse
import sys

from opik_metrics.cli.experiments import add_caption_arguments, cmd_caption


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m opik_metrics.pipelines.captioning",
                                     description="Caption Conceptual Captions images with BLIP and score them.")
    add_caption_arguments(parser)
    return cmd_caption(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
