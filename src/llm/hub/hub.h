// Models from the Hugging Face Hub (or a server with its layout): list a repository's files, pull
// a GGUF file or a model folder (config.json, tokenizer files, safetensors shards) into a cache, and
// find what was pulled.
//
//   auto ref = llm::parse_hub_ref("Qwen/Qwen2.5-0.5B-Instruct-GGUF/qwen2.5-0.5b-instruct-q8_0.gguf");
//   llm::PullReport r = llm::hub_pull(*ref);         // resumes a partial download, checks sha256
//   ModelFile m = open_model(r.path);
//   if (auto p = llm::hub_cached(*ref)) ...;          // later: the cached copy, no network
//
// The hub's API: GET {endpoint}/api/models/{repo}/tree/{revision}?recursive=true lists the files
// (LFS files with their sha256 in lfs.oid, others with their git blob sha1 in oid); a file is
// GET {endpoint}/{repo}/resolve/{revision}/{path} (often a redirect to a CDN). Everything the
// server sends is checked: paths, sizes, hashes; listings are bounded.
#pragma once

#include "util/error.h"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace wgc::llm {

// "owner/name" with an optional file inside ("owner/name/model-q8_0.gguf", "owner/name/sub/x.gguf").
struct HubRef {
  std::string repo;  // "owner/name"
  std::string file;  // "": the model folder
  std::string str() const { return file.empty() ? repo : repo + "/" + file; }
};
// The reference `s` names, or nullopt when it does not look like one: at least owner/name, parts of
// letters, digits, '.', '_', '-' (no "." or ".." parts, no leading '/', '.' or '~').
std::optional<HubRef> parse_hub_ref(std::string_view s);

// The hub's server could not be reached at all (no network, wrong WGC_HF_ENDPOINT): the message
// names the host.
struct HubConnectionError : Error {
  using Error::Error;
};

struct HubOptions {
  std::string endpoint;         // "": $WGC_HF_ENDPOINT, else https://huggingface.co (like HF_ENDPOINT)
  std::filesystem::path cache;  // "": $WGC_CACHE, else ~/.cache/wgc; models go to <cache>/models/owner/name
  std::string revision = "main";
  std::string token;     // "": $HF_TOKEN (gated and private models)
  bool progress = true;  // a progress bar per file (util/progress.h: on a terminal)
  int timeout_s = 60;    // connection and read timeouts
  int attempts = 3;      // tries per file; each one resumes where the last stopped
};
std::string hub_endpoint(const HubOptions& o = {});
std::filesystem::path hub_cache_dir(const HubOptions& o = {});
// Where `ref` lives in the cache (pulled or not): the file, or the model's folder.
std::filesystem::path hub_local_path(const HubRef& ref, const HubOptions& o = {});
// The cached copy when a pull of it completed, else nullopt (no network).
std::optional<std::filesystem::path> hub_cached(const HubRef& ref, const HubOptions& o = {});

struct HubFile {
  std::string path;  // inside the repo
  uint64_t size = 0;
  std::string sha256;    // LFS files (lowercase hex)
  std::string git_sha1;  // the git blob id (every file)
};
inline constexpr size_t kMaxHubFiles = 100000;             // entries of a listing
inline constexpr uint64_t kMaxHubListingBytes = 64 << 20;  // bytes of listing JSON

// The repo's files at the revision. Errors name the repo, the URL and the HTTP status.
std::vector<HubFile> hub_list(const std::string& repo, const HubOptions& o = {});
// What a pull of `ref` fetches from `listing`: the file; or for a folder config.json, the
// tokenizer and generation files present, and the safetensors weights (with their index). Errors
// say what is missing (a file not in the repo; a repo of GGUF files only, listing them).
std::vector<HubFile> hub_files_for(const HubRef& ref, const std::vector<HubFile>& listing);

struct PullReport {
  std::filesystem::path path;                    // the pulled file or folder (what open_model takes)
  int downloaded = 0, resumed = 0, present = 0;  // files
  uint64_t bytes = 0;                            // bytes received
};
// Pulls `ref` into the cache: each file goes to FILE.part beside its place (a .part left by an
// earlier pull resumes with an HTTP range request; a dropped connection retries the same way),
// is checked against the listing's size and sha256 (LFS) or git blob sha1, and only then renamed.
// Files already there with the listed size are kept. `on_file` hears each file before it starts.
PullReport hub_pull(const HubRef& ref, const HubOptions& o = {},
                    const std::function<void(const HubFile&)>& on_file = {});

// --- what the cache holds ------------------------------------------------------------------------

struct CachedModel {
  HubRef ref;                  // owner/name (a model folder) or owner/name/FILE
  std::filesystem::path path;  // what open_model takes
  uint64_t bytes = 0;          // on disk
  bool complete = true;        // false: a .part file of an interrupted pull (`wgc pull` resumes it)
};
// Every completed pull in the cache (model folders and files), and the .part files of interrupted
// ones, sorted by reference. No network.
std::vector<CachedModel> hub_cached_models(const HubOptions& o = {});
// The completed pulls a short name stands for: a file's name ("x-q8_0.gguf") or stem ("x-q8_0"),
// or a model folder's repository name ("Qwen2.5-0.5B-Instruct"). Several when the name is ambiguous.
std::vector<CachedModel> hub_find_name(std::string_view name, const HubOptions& o = {});
// Removes what `ref` names from the cache: one file (with its .part), or for owner/name the
// repository's whole folder (a folder pull and every file pulled from it). Returns the bytes freed;
// wgc::Error when the cache holds nothing of it.
uint64_t hub_remove(const HubRef& ref, const HubOptions& o = {});

}  // namespace wgc::llm
