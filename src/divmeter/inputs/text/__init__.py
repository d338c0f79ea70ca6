"""Tokenizers, tokenize-and-intern, and n-gram statistics shared by the form metrics."""

from divmeter.inputs.text.intern import (
    SetTokens,
    TokenKeys,
    encode_sets,
    interned,
    longest_response,
)
from divmeter.inputs.text.ngrams import (
    NgramIndex,
    encode_tokens,
    fit_groups,
    ngram_tuples,
    set_ngram_keys,
)
from divmeter.inputs.text.tokenize import TOKENIZERS, Tokenizer, get_tokenizer

__all__ = [
    "NgramIndex",
    "SetTokens",
    "TokenKeys",
    "Tokenizer",
    "TOKENIZERS",
    "encode_sets",
    "encode_tokens",
    "fit_groups",
    "get_tokenizer",
    "interned",
    "longest_response",
    "ngram_tuples",
    "set_ngram_keys",
]
