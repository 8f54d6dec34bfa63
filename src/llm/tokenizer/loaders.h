// Reading a tokenizer from files: Hugging Face tokenizer.json (+ tokenizer_config.json,
// generation_config.json beside it), GGUF tokenizer.ggml.* metadata, or whichever a path names.
#pragma once

#include "llm/tokenizer/spec.h"
#include "llm/tokenizer/tokenizer.h"
#include "util/json.h"

#include <filesystem>
#include <string>

namespace wgc::llm {

class GgufFile;

// tokenizer.json as a document; `config` is tokenizer_config.json (or null) for bos/eos/chat
// template. Unsupported or malformed parts throw wgc::Error naming `source` and the field.
TokenizerSpec spec_from_hf_json(const json::Value& tokenizer, const json::Value& config, const std::string& source);
// tokenizer.json, with tokenizer_config.json and generation_config.json from its folder if there.
TokenizerSpec spec_from_hf_file(const std::filesystem::path& tokenizer_json);

// GGUF metadata: tokenizer.ggml.model "gpt2" (byte-level BPE, merges, tokenizer.ggml.pre) or
// "llama" (SentencePiece BPE by scores, byte fallback). BOS follows tokenizer.ggml.add_bos_token,
// else the default of the model / pre-tokenizer type (as llama.cpp).
TokenizerSpec spec_from_gguf(const GgufFile& file);

// A .gguf file, a tokenizer.json, or a folder with tokenizer.json (or one .gguf).
Tokenizer load_tokenizer(const std::filesystem::path& path);

}  // namespace wgc::llm
