"""A Hugging Face BertModel's forward pass and LaBSE's sentence vector,
written for the converter tests from transformers' own definitions (not
from corpq's), on the state dict of pytorch_model.bin and config.json:

* models/bert/modeling_bert.py: BertEmbeddings adds word_embeddings(ids),
  token_type_embeddings(token_type_ids) (all 0 when not given) and, for
  position_embedding_type "absolute", position_embeddings(0..L-1), then
  LayerNorm(eps = layer_norm_eps) and dropout.  Each BertLayer: BertSelfAttention
  (query, key, value Linear; scores q k^T / sqrt(head size) plus the
  attention mask; softmax; dropout; context), BertSelfOutput h = LayerNorm(
  dense(context) + input), BertIntermediate ACT2FN[hidden_act](dense(h)),
  BertOutput LayerNorm(dense(.) + h).  No norm after the last layer.
  BertPooler: tanh(dense(hidden[:, 0])).
* activations.py: "gelu" is the exact x/2 (1 + erf(x / sqrt 2)).
* LaBSE (sentence-transformers/LaBSE's model card with transformers:
  model_output.pooler_output then torch.nn.functional.normalize; its
  sentence-transformers modules: CLS pooling, Dense with Tanh, Normalize):
  the pooler output of [CLS], L2-normalised.
* sentence-transformers directories (modules.json): Pooling (cls: the
  first token's state; mean: the mean over the attention mask), Dense
  (activation(linear(x))), Normalize, from sentence_transformers/models.
* The tokenizer: BertTokenizer(Fast).__call__ of one sentence is
  [CLS] + tokenize(text) + [SEP], token_type_ids all 0, attention_mask
  all 1; tokenize() is test/ref/wordpiece_reference.py's (written from
  tokenization_bert.py and the tokenizers library); a piece maps to its
  vocab.txt line (a repeated line: the last, as load_vocab's dict keeps it;
  an unknown piece: unk_token's id, convert_tokens_to_ids).
Evaluation mode (no dropout), float64.
"""
import math

import torch
import torch.nn.functional as F

from wordpiece_reference import Bert, read_vocab

SPECIAL_KEYS = ("unk_token", "sep_token", "pad_token", "cls_token", "mask_token")


def bert_names(state_dict):
    """BertModel's own names: the "bert." prefix of BertFor... state dicts
    removed, TF-era LayerNorm gamma / beta read as weight / bias
    (PreTrainedModel's loading renames them)."""
    out = {}
    for k, v in state_dict.items():
        k = k[5:] if k.startswith("bert.") else k
        k = k.replace("LayerNorm.gamma", "LayerNorm.weight").replace("LayerNorm.beta", "LayerNorm.bias")
        out[k] = v
    return out


class HFBertRef:
    def __init__(self, state_dict, config, dtype=torch.float64):
        self.dt, self.c = dtype, config
        self.w = {k: v.to(dtype) for k, v in bert_names(state_dict).items() if v.is_floating_point()}
        self.d = config["hidden_size"]
        self.heads = config["num_attention_heads"]
        self.layers = config["num_hidden_layers"]
        self.eps = config.get("layer_norm_eps", 1e-12)
        assert config.get("hidden_act", "gelu") in ("gelu", "gelu_python")

    def _lin(self, name, x):
        return x @ self.w[name + ".weight"].T + self.w[name + ".bias"]

    def _ln(self, name, x):
        return F.layer_norm(x, (self.d,), self.w[name + ".weight"], self.w[name + ".bias"], self.eps)

    def hidden(self, ids, token_type=0):
        """last_hidden_state [L, d] of one sentence of BERT ids (the [CLS] and
        [SEP] included), attention to every position."""
        ids = torch.tensor(ids, dtype=torch.long)
        L, hd = len(ids), self.d // self.heads
        x = (self.w["embeddings.word_embeddings.weight"][ids]
             + self.w["embeddings.token_type_embeddings.weight"][token_type]
             + self.w["embeddings.position_embeddings.weight"][:L])
        x = self._ln("embeddings.LayerNorm", x)
        for i in range(self.layers):
            p = "encoder.layer.%d." % i

            def heads(t):
                return t.view(L, self.heads, hd).transpose(0, 1)
            q = heads(self._lin(p + "attention.self.query", x))
            k = heads(self._lin(p + "attention.self.key", x))
            v = heads(self._lin(p + "attention.self.value", x))
            a = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(hd), dim=-1) @ v
            ctx = a.transpose(0, 1).reshape(L, self.d)
            x = self._ln(p + "attention.output.LayerNorm", self._lin(p + "attention.output.dense", ctx) + x)
            inner = self._lin(p + "intermediate.dense", x)
            inner = 0.5 * inner * (1.0 + torch.erf(inner / math.sqrt(2.0)))
            x = self._ln(p + "output.LayerNorm", self._lin(p + "output.dense", inner) + x)
        return x

    def pooler_output(self, ids):
        return torch.tanh(self._lin("pooler.dense", self.hidden(ids)[0]))

    def labse(self, ids):
        """LaBSE's sentence vector: the pooler output, L2-normalised."""
        return F.normalize(self.pooler_output(ids), dim=-1, eps=1e-12)

    def cls(self, ids):
        """A model without a pooler: the [CLS] state, L2-normalised."""
        return F.normalize(self.hidden(ids)[0], dim=-1, eps=1e-12)

    def sentence_transformers(self, ids, pooling, dense=None):
        """A sentence-transformers pipeline (sentence_transformers/models:
        Pooling, Dense, Normalize): the first token's state ("cls") or the
        mean over the attention mask, every token of one sentence ("mean");
        then tanh(linear(x)) with dense = (weight, bias); then x / |x|."""
        h = self.hidden(ids)
        x = h[0] if pooling == "cls" else h.sum(0) / h.shape[0]
        if dense is not None:
            x = torch.tanh(x @ dense[0].to(self.dt).T + dense[1].to(self.dt))
        return F.normalize(x, dim=-1, eps=1e-12)


class HFBertTokenizer:
    """BertTokenizer / BertTokenizerFast on one sentence: BERT ids of
    [CLS] pieces [SEP]."""

    def __init__(self, vocab_text, options):
        self.lines = read_vocab(vocab_text)
        self.ids = {}
        for i, t in enumerate(self.lines):
            self.ids[t] = i                    # a repeated line: the last
        opts = {k: v for k, v in options.items()}
        self.specials = {k: opts.get(k, d) for k, d in zip(
            SPECIAL_KEYS, ("[UNK]", "[SEP]", "[PAD]", "[CLS]", "[MASK]"))}
        self.bert = Bert(self.lines, **opts)

    def pieces(self, text):
        return self.bert.tokenize(text)

    def piece_ids(self, text):
        unk = self.ids[self.specials["unk_token"]]
        return [self.ids.get(p, unk) for p in self.pieces(text)]

    def encode(self, text):
        return ([self.ids[self.specials["cls_token"]]] + self.piece_ids(text)
                + [self.ids[self.specials["sep_token"]]])
