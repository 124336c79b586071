"""all-MiniLM-L6-v2's tokenizer, built from the WordPiece vocabulary that ships with memoryd.

The packages that carry the model's ``tokenizer.json`` on PyPI depend on torch, so memoryd
ships the vocabulary (``assets/minilm-vocab.txt``, Apache-2.0) and builds the same tokenizer
from it: BERT normalisation (lower case, accents kept, Chinese characters split), BERT
pre-tokenisation, WordPiece, ``[CLS] text [SEP]``. It gives the token ids of the model's own
``tokenizer.json`` (checked on real text by tests/test_embed_onnx.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

#: all-MiniLM-L6-v2's WordPiece vocabulary (see assets/README.md).
MINILM_VOCAB = Path(__file__).resolve().parent / "assets" / "minilm-vocab.txt"
_SPECIAL = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def wordpiece_tokenizer(vocab_path: Path = MINILM_VOCAB) -> Any:
    """A ``tokenizers.Tokenizer`` for an uncased BERT WordPiece ``vocab.txt``."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

    vocab = models.WordPiece.read_file(str(vocab_path))
    tokenizer = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=100))
    tokenizer.add_special_tokens(list(_SPECIAL))
    tokenizer.normalizer = normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=True, strip_accents=None, lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.post_processor = processors.BertProcessing(
        ("[SEP]", vocab["[SEP]"]), ("[CLS]", vocab["[CLS]"]))
    tokenizer.decoder = decoders.WordPiece(prefix="##")
    return tokenizer
