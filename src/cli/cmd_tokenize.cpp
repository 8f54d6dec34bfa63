// wgc tokenize / wgc detokenize: text <-> token ids with a model's tokenizer (a GGUF file, a Hugging
// Face folder, or a tokenizer.json).
#include "cli/command.h"
#include "cli/llm_flags.h"
#include "llm/generate/default_model.h"
#include "llm/tokenizer/loaders.h"
#include "llm/tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/json.h"

#include <charconv>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <iterator>
#include <sstream>

namespace wgc::cli {
namespace {

std::string read_stdin() {
  std::ostringstream ss;
  ss << std::cin.rdbuf();
  return ss.str();
}

struct Flags {
  std::optional<std::string> model, prompt;
  bool json = false, pieces = false, no_special = false, skip_special = false;
  std::vector<std::string> words;
};

// --model (a .gguf file, a folder, or a tokenizer.json), else the built-in default model.
llm::Tokenizer tokenizer_of(const Flags& f) { return llm::load_tokenizer(model_path(f.model)); }

void add_model_flag(CLI::App& app, Flags& f) {
  add_text(app, "--model,-m", f.model,
           "a GGUF file, Hugging Face folder or tokenizer.json (default: the built-in wgc-tiny-dict)")
      ->type_name("PATH");
}

int tokenize(const Flags& f) {
  const bool json = f.json, pieces = f.pieces, no_special = f.no_special;
  llm::Tokenizer tok = tokenizer_of(f);
  const auto& words = f.words;
  if (f.prompt && !words.empty()) throw UsageError("give the text as --prompt TEXT or as arguments, not both");
  std::string text;
  if (f.prompt) {
    text = *f.prompt;
  } else if (words.empty() || (words.size() == 1 && words[0] == "-")) {
    text = read_stdin();
  } else {
    for (size_t i = 0; i < words.size(); ++i) text += (i ? " " : "") + words[i];
  }
  std::vector<int32_t> ids = tok.encode(text, !no_special);
  std::string out;
  if (json) {
    json::Value arr = json::Value::array();
    if (pieces) {
      for (int32_t id : ids) {
        json::Value o = json::Value::object();
        o.set("id", int64_t(id));
        o.set("piece", tok.token(id));
        arr.push_back(std::move(o));
      }
    } else {
      for (int32_t id : ids) arr.push_back(int64_t(id));
    }
    out = arr.dump() + "\n";
  } else if (pieces) {
    for (int32_t id : ids) {
      out += std::to_string(id);
      out += '\t';
      out += json::quote(tok.token(id));
      out += '\n';
    }
  } else {
    for (size_t i = 0; i < ids.size(); ++i) {
      if (i) out += ' ';
      out += std::to_string(ids[i]);
    }
    out += '\n';
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

// Ids from arguments or stdin: integers separated by spaces, commas or JSON brackets.
std::vector<int32_t> parse_ids(const std::string& s) {
  std::vector<int32_t> ids;
  size_t i = 0;
  while (i < s.size()) {
    char c = s[i];
    if (c == ' ' || c == ',' || c == '[' || c == ']' || c == '\n' || c == '\t' || c == '\r') {
      ++i;
      continue;
    }
    size_t j = i;
    if (s[j] == '-') ++j;
    while (j < s.size() && s[j] >= '0' && s[j] <= '9') ++j;
    std::string num = s.substr(i, j - i);
    if (num.empty() || num == "-" || (j < s.size() && std::string(" ,[]\n\t\r").find(s[j]) == std::string::npos)) {
      size_t e = s.find_first_of(" ,[]\n\t\r", i);
      throw Error("wgc detokenize: '" + s.substr(i, e == std::string::npos ? std::string::npos : e - i) +
                  "' is not a token id");
    }
    int64_t v = 0;
    auto [end, ec] = std::from_chars(num.data(), num.data() + num.size(), v);
    if (ec != std::errc() || end != num.data() + num.size() || v < 0 || v > INT32_MAX)
      throw Error("wgc detokenize: token id " + num + " is out of range (0 to 2147483647)");
    ids.push_back(int32_t(v));
    i = j;
  }
  return ids;
}

int detokenize(const Flags& f) {
  bool skip = f.skip_special;
  llm::Tokenizer tok = tokenizer_of(f);
  const auto& words = f.words;
  std::string all;
  if (words.empty() || (words.size() == 1 && words[0] == "-")) {
    all = read_stdin();
  } else {
    for (auto& w : words) all += w + " ";
  }
  std::vector<int32_t> ids = parse_ids(all);
  if (ids.empty())
    throw Error("wgc detokenize: no token ids given (integers separated by spaces or commas, or a JSON array)");
  std::string text = tok.decode(ids, skip) + "\n";
  std::fwrite(text.data(), 1, text.size(), stdout);
  return 0;
}

Register reg_tok{{"tokenize", "token ids of TEXT (stdin when absent) with a model's tokenizer", [](CLI::App& app) {
                    auto f = std::make_shared<Flags>();
                    add_model_flag(app, *f);
                    app.add_flag("--json", f->json, "print a JSON array");
                    app.add_flag("--pieces", f->pieces, "print each id with its token's text");
                    app.add_flag("--no-special", f->no_special, "no BOS or other special tokens added");
                    add_text(app, "--prompt,-p", f->prompt, "the text (instead of TEXT; llama.cpp's -p)");
                    add_rest(app, f->words, "TEXT ...",
                             "the text, byte for byte (words joined by spaces; after --: even words that begin "
                             "with -); '-' or none: stdin");
                    return [f] { return tokenize(*f); };
                  }}};
Register reg_detok{
    {"detokenize", "text of token ids (spaces, commas or a JSON array; stdin when absent)", [](CLI::App& app) {
       auto f = std::make_shared<Flags>();
       add_model_flag(app, *f);
       app.add_flag("--skip-special", f->skip_special, "leave special tokens (BOS, EOS) out");
       add_rest(app, f->words, "IDS ...", "token ids (spaces, commas or a JSON array); '-' or none: stdin");
       return [f] { return detokenize(*f); };
     }}};

}  // namespace
}  // namespace wgc::cli
