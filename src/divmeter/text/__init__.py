"""Tokenizers and n-gram statistics shared by the form metrics."""

from divmeter.text.ngrams import NgramIndex, encode_tokens
from divmeter.text.tokenize import TOKENIZERS, Tokenizer, get_tokenizer

__all__ = ["NgramIndex", "Tokenizer", "TOKENIZERS", "encode_tokens", "get_tokenizer"]
