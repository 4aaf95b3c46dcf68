"""Tokenisers: rouge-score's and a Unicode word tokeniser, sacrebleu's BLEU tokenisers and our 13a, pycocoevalcap's PTB."""
