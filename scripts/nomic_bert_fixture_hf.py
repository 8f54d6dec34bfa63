#!/usr/bin/env python3
"""The Hugging Face form of a nomic-bert GGUF (part of scripts/make_nomic_bert_fixture.sh).

Reads a nomic-bert GGUF as `wgc synth-model` writes it (F32 / F16 tensors, a BERT WordPiece
vocabulary in llama.cpp's phantom-space form) and writes beside it the folder nomic's Hub repos
have: config.json (NomicBertConfig's keys), model.safetensors under nomic's tensor names (the same
bytes: GGUF and safetensors both store rows back to back, little-endian, GGUF listing the shape
innermost first), tokenizer.json (tokenizers' BertNormalizer / BertPreTokenizer / WordPiece with
[CLS] $A [SEP]), tokenizer_config.json, and sentence-transformers' modules.json + 1_Pooling (mean).
Plain Python 3 (no numpy, no gguf package).

    python3 scripts/nomic_bert_fixture_hf.py MODEL.gguf OUT_DIR
"""
import json
import os
import struct
import sys

SCALAR = {0: 'B', 1: 'b', 2: 'H', 3: 'h', 4: 'I', 5: 'i', 6: 'f', 7: '?', 10: 'Q', 11: 'q', 12: 'd'}
TYPES = {0: ('F32', 4), 1: ('F16', 2)}  # GGML type -> safetensors dtype, bytes per element


def read_gguf(path):
    b = open(path, 'rb').read()
    pos = 0

    def rd(fmt):
        nonlocal pos
        v = struct.unpack_from('<' + fmt, b, pos)[0]
        pos += struct.calcsize('<' + fmt)
        return v

    def rs():
        nonlocal pos
        n = rd('Q')
        s = b[pos:pos + n].decode('utf-8')
        pos += n
        return s

    def value(t):
        if t == 8:
            return rs()
        if t == 9:
            et, n = rd('I'), rd('Q')
            return [value(et) for _ in range(n)]
        return rd(SCALAR[t])

    assert b[:4] == b'GGUF', 'not a GGUF file'
    pos = 4
    version, n_tensors, n_kv = rd('I'), rd('Q'), rd('Q')
    assert version in (2, 3)
    meta = {}
    for _ in range(n_kv):
        k = rs()
        meta[k] = value(rd('I'))
    tensors = []
    for _ in range(n_tensors):
        name = rs()
        dims = [rd('Q') for _ in range(rd('I'))]
        tensors.append((name, dims, rd('I'), rd('Q')))
    align = meta.get('general.alignment', 32)
    start = (pos + align - 1) // align * align
    out = {}
    for name, dims, t, off in tensors:
        dtype, size = TYPES[t]
        n = 1
        for d in dims:
            n *= d
        out[name] = (dtype, list(reversed(dims)), b[start + off:start + off + n * size])
    return meta, out


HF_NAMES = {  # GGUF -> nomic's names ({L}: the layer), as llama.cpp's tensor_mapping.py maps them
    'token_embd.weight': 'embeddings.word_embeddings.weight',
    'token_types.weight': 'embeddings.token_type_embeddings.weight',
    'token_embd_norm.weight': 'emb_ln.weight',
    'token_embd_norm.bias': 'emb_ln.bias',
    'attn_qkv.weight': 'encoder.layers.{L}.attn.Wqkv.weight',
    'attn_output.weight': 'encoder.layers.{L}.attn.out_proj.weight',
    'attn_output_norm.weight': 'encoder.layers.{L}.norm1.weight',
    'attn_output_norm.bias': 'encoder.layers.{L}.norm1.bias',
    'ffn_up.weight': 'encoder.layers.{L}.mlp.fc11.weight',
    'ffn_gate.weight': 'encoder.layers.{L}.mlp.fc12.weight',
    'ffn_down.weight': 'encoder.layers.{L}.mlp.fc2.weight',
    'layer_output_norm.weight': 'encoder.layers.{L}.norm2.weight',
    'layer_output_norm.bias': 'encoder.layers.{L}.norm2.bias',
}


def hf_name(g):
    if g.startswith('blk.'):
        _, layer, rest = g.split('.', 2)
        return HF_NAMES[rest].replace('{L}', layer)
    return HF_NAMES[g]


def write_safetensors(path, tensors):
    header, offset, blobs = {}, 0, []
    for name in sorted(tensors):
        dtype, shape, data = tensors[name]
        header[name] = {'dtype': dtype, 'shape': shape, 'data_offsets': [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    header['__metadata__'] = {'format': 'pt'}
    h = json.dumps(header, separators=(',', ':')).encode()
    h += b' ' * ((8 - len(h) % 8) % 8)
    with open(path, 'wb') as f:
        f.write(struct.pack('<Q', len(h)) + h + b''.join(blobs))


def main(src, out):
    meta, tensors = read_gguf(src)
    a = meta['general.architecture']
    assert a == 'nomic-bert', a
    assert meta['tokenizer.ggml.model'] == 'bert'
    os.makedirs(os.path.join(out, '1_Pooling'), exist_ok=True)
    hidden = meta[a + '.embedding_length']
    config = {
        'architectures': ['NomicBertModel'],
        'model_type': 'nomic_bert',
        'activation_function': 'swiglu',
        'vocab_size': tensors['token_embd.weight'][1][0],
        'n_embd': hidden,
        'n_head': meta[a + '.attention.head_count'],
        'n_layer': meta[a + '.block_count'],
        'n_inner': meta[a + '.feed_forward_length'],
        'n_positions': meta[a + '.context_length'],
        'max_trained_positions': meta[a + '.context_length'],
        'layer_norm_epsilon': meta[a + '.attention.layer_norm_epsilon'],
        'rotary_emb_base': meta[a + '.rope.freq_base'],
        'rotary_emb_fraction': 1.0,
        'rotary_emb_interleaved': False,
        'rotary_scaling_factor': None,
        'type_vocab_size': tensors['token_types.weight'][1][0],
        'qkv_proj_bias': False,
        'mlp_fc1_bias': False,
        'mlp_fc2_bias': False,
        'prenorm': False,
        'parallel_block': False,
        'use_rms_norm': False,
        'causal': False,
        'torch_dtype': 'float16' if tensors['token_embd.weight'][0] == 'F16' else 'float32',
    }
    with open(os.path.join(out, 'config.json'), 'w') as f:
        json.dump(config, f, indent=1)
    write_safetensors(os.path.join(out, 'model.safetensors'), {hf_name(k): v for k, v in tensors.items()})

    # WordPiece: the phantom space undone (U+2581 + piece: a word start; else a "##" continuation).
    vocab = {}
    for i, t in enumerate(meta['tokenizer.ggml.tokens']):
        if t.startswith('[') and t.endswith(']'):
            piece = t
        elif t.startswith('\u2581'):
            piece = t[1:]
        else:
            piece = '##' + t
        vocab[piece] = i
    specials = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]']
    cls, sep = meta['tokenizer.ggml.bos_token_id'], meta['tokenizer.ggml.eos_token_id']
    tok = {
        'version': '1.0', 'truncation': None, 'padding': None,
        'added_tokens': [{'id': vocab[s], 'content': s, 'single_word': False, 'lstrip': False, 'rstrip': False,
                          'normalized': False, 'special': True} for s in specials],
        'normalizer': {'type': 'BertNormalizer', 'clean_text': True, 'handle_chinese_chars': True,
                       'strip_accents': None, 'lowercase': True},
        'pre_tokenizer': {'type': 'BertPreTokenizer'},
        'post_processor': {
            'type': 'TemplateProcessing',
            'single': [{'SpecialToken': {'id': '[CLS]', 'type_id': 0}}, {'Sequence': {'id': 'A', 'type_id': 0}},
                       {'SpecialToken': {'id': '[SEP]', 'type_id': 0}}],
            'pair': [{'SpecialToken': {'id': '[CLS]', 'type_id': 0}}, {'Sequence': {'id': 'A', 'type_id': 0}},
                     {'SpecialToken': {'id': '[SEP]', 'type_id': 0}}, {'Sequence': {'id': 'B', 'type_id': 1}},
                     {'SpecialToken': {'id': '[SEP]', 'type_id': 1}}],
            'special_tokens': {'[CLS]': {'id': '[CLS]', 'ids': [cls], 'tokens': ['[CLS]']},
                               '[SEP]': {'id': '[SEP]', 'ids': [sep], 'tokens': ['[SEP]']}}},
        'decoder': {'type': 'WordPiece', 'prefix': '##', 'cleanup': True},
        'model': {'type': 'WordPiece', 'unk_token': '[UNK]', 'continuing_subword_prefix': '##',
                  'max_input_chars_per_word': 100, 'vocab': vocab},
    }
    with open(os.path.join(out, 'tokenizer.json'), 'w') as f:
        json.dump(tok, f, indent=1, ensure_ascii=False)
    with open(os.path.join(out, 'tokenizer_config.json'), 'w') as f:
        json.dump({'cls_token': '[CLS]', 'sep_token': '[SEP]', 'pad_token': '[PAD]', 'unk_token': '[UNK]',
                   'mask_token': '[MASK]', 'do_lower_case': True, 'model_max_length': config['n_positions'],
                   'tokenizer_class': 'BertTokenizer'}, f, indent=1)
    with open(os.path.join(out, 'modules.json'), 'w') as f:
        json.dump([{'idx': 0, 'name': '0', 'path': '', 'type': 'sentence_transformers.models.Transformer'},
                   {'idx': 1, 'name': '1', 'path': '1_Pooling', 'type': 'sentence_transformers.models.Pooling'}],
                  f, indent=1)
    with open(os.path.join(out, '1_Pooling', 'config.json'), 'w') as f:
        json.dump({'word_embedding_dimension': hidden, 'pooling_mode_cls_token': False,
                   'pooling_mode_mean_tokens': True, 'pooling_mode_max_tokens': False,
                   'pooling_mode_mean_sqrt_len_tokens': False, 'pooling_mode_lasttoken': False}, f, indent=1)


if __name__ == '__main__':
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
