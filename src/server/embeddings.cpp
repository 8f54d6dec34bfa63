#include "server/embeddings.h"

#include "server/api_error.h"
#include "util/base64.h"
#include "util/json.h"

#include <cmath>
#include <cstring>

namespace wgc::server {

namespace {

using json::Value;

std::vector<int32_t> token_array(const Value& a, const Embedder& e, const std::string& field) {
  std::vector<int32_t> ids;
  for (const Value& v : a.items()) {
    if (!v.is_int()) throw bad_request("input", field + " holds " + v.dump() + ", not a token id");
    const int64_t id = v.as_int();
    if (id < 0 || id >= e.vocab)
      throw bad_request("input", field + ": token id " + std::to_string(id) + " is outside the vocabulary (0.." +
                                     std::to_string(e.vocab - 1) + ")");
    ids.push_back(int32_t(id));
  }
  return ids;
}

std::vector<std::vector<int32_t>> read_inputs(const Value& input, const Embedder& e) {
  std::vector<std::vector<int32_t>> seqs;
  auto text = [&](const std::string& s, const std::string& field) {
    if (s.empty()) throw bad_request("input", field + " is an empty string");
    seqs.push_back(e.encode ? e.encode(s) : e.tokenizer->encode(s, true));
  };
  if (input.is_string()) {
    text(input.as_string(), "input");
  } else if (input.is_array()) {
    if (input.size() == 0) throw bad_request("input", "input is an empty array");
    if (input.size() > e.max_inputs)
      throw bad_request("input", "input holds " + std::to_string(input.size()) + " items, at most " +
                                     std::to_string(e.max_inputs) + " are taken per request");
    if (input[size_t(0)].is_number()) {
      seqs.push_back(token_array(input, e, "input"));
    } else {
      for (size_t i = 0; i < input.size(); ++i) {
        const Value& v = input[i];
        const std::string field = "input[" + std::to_string(i) + "]";
        if (v.is_string()) {
          text(v.as_string(), field);
        } else if (v.is_array()) {
          if (v.size() == 0) throw bad_request("input", field + " is an empty token array");
          seqs.push_back(token_array(v, e, field));
        } else {
          throw bad_request("input", field + " is " + std::string(json::to_string(v.type())) +
                                         ", expected a string or an array of token ids");
        }
      }
    }
  } else {
    throw bad_request("input", "input must be a string, an array of strings, or token ids (got " +
                                   std::string(json::to_string(input.type())) + ")");
  }
  for (size_t i = 0; i < seqs.size(); ++i)
    if (int64_t(seqs[i].size()) > e.max_tokens)
      throw bad_request("input", "input " + std::to_string(i) + " has " + std::to_string(seqs[i].size()) +
                                     " tokens; this model's maximum is " + std::to_string(e.max_tokens) +
                                     ": shorten it or split it");
  return seqs;
}

}  // namespace

std::string embeddings_response(const std::string& body, Embedder& e) {
  Value req;
  try {
    req = json::parse(body, "request body");
  } catch (const Error& err) {
    throw bad_request("", plain_message(err));
  }
  if (!req.is_object()) throw bad_request("", "the request body must be a JSON object");
  if (const Value* m = req.find("model"); m && !m->is_null()) {
    if (!m->is_string()) throw bad_request("model", "model must be a string");
    if (m->as_string() != e.model_id)
      throw ApiError(404,
                     "the model '" + m->as_string() + "' does not exist (this server embeds with '" + e.model_id + "')",
                     "invalid_request_error", "model", "model_not_found");
  }
  std::string format = "float";
  if (const Value* f = req.find("encoding_format"); f && !f->is_null()) {
    if (!f->is_string() || (f->as_string() != "float" && f->as_string() != "base64"))
      throw bad_request("encoding_format", "encoding_format must be \"float\" or \"base64\", got " + f->dump());
    format = f->as_string();
  }
  int64_t dims = e.dim;
  if (const Value* d = req.find("dimensions"); d && !d->is_null()) {
    if (!d->is_int() || d->as_int() < 1 || d->as_int() > e.dim)
      throw bad_request("dimensions",
                        "dimensions must be an integer in 1.." + std::to_string(e.dim) + ", got " + d->dump());
    dims = d->as_int();
  }
  const Value* input = req.find("input");
  if (!input || input->is_null()) throw bad_request("input", "input is required");
  std::vector<std::vector<int32_t>> seqs = read_inputs(*input, e);
  std::vector<float> vecs;
  {
    std::lock_guard lock(e.mu);
    vecs = e.run(seqs);
  }
  if (vecs.size() != seqs.size() * size_t(e.dim)) throw Error("wgc: the embedding model returned the wrong size");
  Value data = Value::array();
  int64_t tokens = 0;
  std::vector<float> v(static_cast<size_t>(dims));
  for (size_t i = 0; i < seqs.size(); ++i) {
    tokens += int64_t(seqs[i].size());
    std::memcpy(v.data(), vecs.data() + i * size_t(e.dim), v.size() * sizeof(float));
    if (dims < e.dim) {
      double n = 0;
      for (float x : v) n += double(x) * x;
      n = std::max(std::sqrt(n), 1e-12);
      for (float& x : v) x = float(x / n);
    }
    Value item = Value::object();
    item.set("object", "embedding");
    item.set("index", int64_t(i));
    if (format == "base64") {
      item.set("embedding", base64(std::as_bytes(std::span<const float>(v))));
    } else {
      Value arr = Value::array();
      for (float x : v) arr.push_back(double(x));
      item.set("embedding", std::move(arr));
    }
    data.push_back(std::move(item));
  }
  Value out = Value::object();
  out.set("object", "list");
  out.set("data", std::move(data));
  out.set("model", e.model_id);
  Value usage = Value::object();
  usage.set("prompt_tokens", tokens);
  usage.set("total_tokens", tokens);
  out.set("usage", std::move(usage));
  return out.dump();
}

}  // namespace wgc::server
