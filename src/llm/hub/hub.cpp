#include "llm/hub/hub.h"

#include "util/json.h"
#include "util/output_file.h"
#include "util/progress.h"

#include <httplib.h>
#include <openssl/evp.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <set>

namespace wgc::llm {

namespace fs = std::filesystem;

namespace {

constexpr int kMaxRedirects = 10;
constexpr int kMaxListingPages = 100;
constexpr size_t kMaxPathBytes = 1024;

bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  for (size_t at = 0;;) {
    size_t end = s.find(sep, at);
    out.push_back(s.substr(at, end == std::string_view::npos ? std::string_view::npos : end - at));
    if (end == std::string_view::npos) return out;
    at = end + 1;
  }
}

// A path inside a repo as the listing gives it: relative, no empty, "." or ".." parts, no
// backslashes or control bytes, bounded; it becomes a path under the cache folder.
bool safe_repo_path(std::string_view p) {
  if (p.empty() || p.size() > kMaxPathBytes || p.front() == '/') return false;
  for (char c : p)
    if (static_cast<unsigned char>(c) < 0x20 || c == '\\' || c == 0x7F) return false;
  for (auto part : split(p, '/'))
    if (part.empty() || part == "." || part == "..") return false;
  return true;
}

std::string env_or(const char* name, std::string_view def) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : std::string(def);
}

// Percent-encoding of a URL path (keeps '/' and RFC 3986's unreserved characters).
std::string url_path(std::string_view s) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (name_char(char(c)) || c == '/' || c == '~') {
      out += char(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

struct Url {
  std::string origin;  // "https://huggingface.co"
  std::string path;    // "/api/..."
};

Url split_url(const std::string& url) {
  size_t scheme = url.find("://");
  if (scheme == std::string::npos) throw Error("wgc: hub: '" + url + "' is not an http(s) URL");
  std::string s = url.substr(0, scheme);
  if (s != "http" && s != "https") throw Error("wgc: hub: '" + url + "' is not an http(s) URL");
  size_t slash = url.find('/', scheme + 3);
  if (slash == std::string::npos) return {url, "/"};
  return {url.substr(0, slash), url.substr(slash)};
}

// The URL a redirect leads to: absolute, or a path on the same origin.
std::string resolve_location(const Url& from, const std::string& location) {
  if (location.find("://") != std::string::npos) return location;
  if (!location.empty() && location.front() == '/') return from.origin + location;
  std::string base = from.path.substr(0, from.path.rfind('/') + 1);
  return from.origin + base + location;
}

std::string hex(const unsigned char* d, unsigned n) {
  static const char* h = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < n; ++i) {
    out += h[d[i] >> 4];
    out += h[d[i] & 15];
  }
  return out;
}

// sha256 of the file, and sha1 of it as a git blob ("blob <size>\0" + bytes).
struct Digests {
  std::string sha256, git_sha1;
};

Digests digests(const fs::path& p, uint64_t size) {
  struct Ctx {
    EVP_MD_CTX* c = EVP_MD_CTX_new();
    ~Ctx() { EVP_MD_CTX_free(c); }
  } a, b;
  if (!a.c || !b.c || !EVP_DigestInit_ex(a.c, EVP_sha256(), nullptr) || !EVP_DigestInit_ex(b.c, EVP_sha1(), nullptr))
    throw Error("wgc: hub: OpenSSL could not start a digest");
  std::string head = "blob " + std::to_string(size);
  head += '\0';
  EVP_DigestUpdate(b.c, head.data(), head.size());
  std::ifstream f(p, std::ios::binary);
  if (!f) throw Error(p.string() + ": cannot read it back");
  std::vector<char> buf(1 << 20);
  while (f.read(buf.data(), std::streamsize(buf.size())) || f.gcount() > 0) {
    EVP_DigestUpdate(a.c, buf.data(), size_t(f.gcount()));
    EVP_DigestUpdate(b.c, buf.data(), size_t(f.gcount()));
  }
  unsigned char d[EVP_MAX_MD_SIZE];
  unsigned n = 0;
  Digests out;
  EVP_DigestFinal_ex(a.c, d, &n);
  out.sha256 = hex(d, n);
  EVP_DigestFinal_ex(b.c, d, &n);
  out.git_sha1 = hex(d, n);
  return out;
}

std::string lower(std::string s) {
  for (auto& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// GET with redirects followed by hand: the token goes only to the endpoint's own origin (a CDN a
// file redirects to gets a signed URL instead).
class Http {
 public:
  explicit Http(const HubOptions& o) : o_(o), endpoint_(split_url(hub_endpoint(o)).origin) {}

  struct Reply {
    int status = 0;
    httplib::Headers headers;
    std::string url;    // after redirects
    bool cut = false;   // the body stopped before its end (the connection dropped, or `body` said stop)
    std::string error;  // why, when cut
    std::string header(const char* name) const {
      auto it = headers.find(name);
      return it == headers.end() ? "" : it->second;
    }
  };

  // GET `url` with `headers`. `start` sees the final response's status and headers before its body
  // (false: no body wanted); `body` hears the bytes of a 2xx response (false stops it).
  Reply get(std::string url, const httplib::Headers& headers, const std::function<bool(const Reply&)>& start,
            const std::function<bool(const char*, size_t)>& body) const {
    for (int hop = 0; hop <= kMaxRedirects; ++hop) {
      Url u = split_url(url);
      httplib::Client c(u.origin);
      c.set_connection_timeout(o_.timeout_s);
      c.set_read_timeout(o_.timeout_s);
      c.set_follow_location(false);
      c.set_keep_alive(false);
      std::string token = o_.token.empty() ? env_or("HF_TOKEN", "") : o_.token;
      if (!token.empty() && u.origin == endpoint_) c.set_bearer_token_auth(token);
      Reply r;
      r.url = url;
      bool redirect = false, wanted = false;
      auto res = c.Get(
          u.path, headers,
          [&](const httplib::Response& resp) {
            r.status = resp.status;
            r.headers = resp.headers;
            redirect = resp.status >= 300 && resp.status < 400 && resp.has_header("Location");
            wanted = !redirect && resp.status >= 200 && resp.status < 300 && (!start || start(r));
            return true;  // error bodies are read (and dropped) so the status comes back
          },
          [&](const char* data, size_t n) { return wanted ? body(data, n) : true; });
      if (!res) {
        const httplib::Error e = res.error();
        if (r.status == 0 && (e == httplib::Error::Connection || e == httplib::Error::ConnectionTimeout ||
                              e == httplib::Error::SSLConnection || e == httplib::Error::BindIPAddress))
          throw HubConnectionError(
              "wgc: hub: cannot connect to " + u.origin + " (GET " + url + ": " + httplib::to_string(e) +
              "): the network may be unreachable from here (offline, a firewall, a proxy); WGC_HF_ENDPOINT points "
              "wgc at another server with the hub's layout (now " +
              endpoint_ + ")");
        if (r.status == 0 || redirect || !wanted)
          throw Error("wgc: hub: GET " + url + " failed: " + httplib::to_string(e));
        r.cut = true;
        r.error = httplib::to_string(res.error());
        return r;
      }
      r.status = res->status;
      r.headers = res->headers;
      if (!redirect) return r;
      url = resolve_location(u, res->get_header_value("Location"));
    }
    throw Error("wgc: hub: GET " + url + ": more than " + std::to_string(kMaxRedirects) + " redirects");
  }

 private:
  HubOptions o_;
  std::string endpoint_;
};

std::string status_text(const std::string& what, const Http::Reply& r) {
  std::string s = what + ": HTTP " + std::to_string(r.status) + " from " + r.url;
  if (r.status == 401 || r.status == 403)
    s += " (a gated or private model: accept its terms on the hub and set HF_TOKEN)";
  else if (r.status == 404)
    s += " (no such repository, revision or file)";
  return s;
}

// The listing's next page, from a Link header: <URL>; rel="next".
std::string next_page(const httplib::Headers& h) {
  for (auto it = h.find("Link"); it != h.end() && it->first == "Link"; ++it)
    for (auto part : split(it->second, ',')) {
      if (part.find("rel=\"next\"") == std::string_view::npos) continue;
      size_t a = part.find('<'), b = part.find('>');
      if (a != std::string_view::npos && b != std::string_view::npos && b > a)
        return std::string(part.substr(a + 1, b - a - 1));
    }
  return "";
}

void check_repo(const std::string& repo) {
  auto ref = parse_hub_ref(repo);
  if (!ref || !ref->file.empty()) throw Error("wgc: hub: '" + repo + "' is not a repository name (owner/name)");
}

std::string file_url(const HubOptions& o, const std::string& repo, const std::string& path) {
  return hub_endpoint(o) + "/" + repo + "/resolve/" + url_path(o.revision) + "/" + url_path(path);
}

constexpr const char* kPulledMarker = ".wgc-pulled.json";  // a completed folder pull: its files

}  // namespace

// --- names and places ------------------------------------------------------------------------------

std::optional<HubRef> parse_hub_ref(std::string_view s) {
  if (s.empty() || s.size() > kMaxPathBytes || s.front() == '/' || s.front() == '.' || s.front() == '~')
    return std::nullopt;
  auto parts = split(s, '/');
  if (parts.size() < 2) return std::nullopt;
  for (auto p : parts) {
    if (p.empty() || p == "." || p == "..") return std::nullopt;
    if (!std::all_of(p.begin(), p.end(), name_char)) return std::nullopt;
  }
  HubRef r;
  r.repo = std::string(parts[0]) + "/" + std::string(parts[1]);
  for (size_t i = 2; i < parts.size(); ++i) r.file += (i > 2 ? "/" : "") + std::string(parts[i]);
  return r;
}

std::string hub_endpoint(const HubOptions& o) {
  std::string e = o.endpoint.empty() ? env_or("WGC_HF_ENDPOINT", "https://huggingface.co") : o.endpoint;
  while (!e.empty() && e.back() == '/') e.pop_back();
  split_url(e);  // an http(s) URL, or an error naming it
  return e;
}

fs::path hub_cache_dir(const HubOptions& o) {
  if (!o.cache.empty()) return o.cache;
  if (const char* c = std::getenv("WGC_CACHE"); c && *c) return c;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return fs::path(x) / "wgc";
  const char* home = std::getenv("HOME");
  if (!home || !*home) throw Error("wgc: no cache folder: set WGC_CACHE (HOME is not set)");
  return fs::path(home) / ".cache" / "wgc";
}

fs::path hub_local_path(const HubRef& ref, const HubOptions& o) {
  fs::path dir = hub_cache_dir(o) / "models" / ref.repo;
  return ref.file.empty() ? dir : dir / ref.file;
}

std::optional<fs::path> hub_cached(const HubRef& ref, const HubOptions& o) {
  fs::path p = hub_local_path(ref, o);
  std::error_code ec;
  if (!ref.file.empty()) {  // a single file is renamed into place only once checked
    if (fs::is_regular_file(p, ec)) return p;
    return std::nullopt;
  }
  if (!fs::is_regular_file(p / kPulledMarker, ec)) return std::nullopt;
  try {
    json::Value m = json::parse_file(p / kPulledMarker);
    for (const auto& f : m["files"].items())
      if (!safe_repo_path(f.as_string()) || !fs::is_regular_file(p / f.as_string(), ec)) return std::nullopt;
  } catch (const Error&) {
    return std::nullopt;
  }
  return p;
}

// --- listing ---------------------------------------------------------------------------------------

std::vector<HubFile> hub_list(const std::string& repo, const HubOptions& o) {
  check_repo(repo);
  Http http(o);
  std::vector<HubFile> files;
  std::string url = hub_endpoint(o) + "/api/models/" + repo + "/tree/" + url_path(o.revision) + "?recursive=true";
  for (int page = 0; !url.empty(); ++page) {
    if (page == kMaxListingPages)
      throw Error("wgc: hub: the listing of " + repo + " runs past " + std::to_string(kMaxListingPages) + " pages");
    std::string text;
    bool too_big = false;
    auto r = http.get(url, {}, {}, [&](const char* d, size_t n) {
      too_big = text.size() + n > kMaxHubListingBytes;
      if (!too_big) text.append(d, n);
      return !too_big;
    });
    if (too_big)
      throw Error("wgc: hub: the file list of " + repo + " is larger than " +
                  std::to_string(kMaxHubListingBytes >> 20) + " MiB");
    if (r.status != 200) throw Error("wgc: hub: listing " + repo + ": " + status_text("the file list", r));
    if (r.cut) throw Error("wgc: hub: the file list of " + repo + " (" + r.url + ") was cut: " + r.error);
    json::Value doc = json::parse(text, "the file list of " + repo + " (" + r.url + ")", {64});
    if (!doc.is_array()) throw Error("wgc: hub: the file list of " + repo + " (" + r.url + ") is not a JSON array");
    for (const auto& e : doc.items()) {
      if (!e.is_object() || e.get_string("type") != "file") continue;
      HubFile f;
      f.path = e.get_string("path");
      if (!safe_repo_path(f.path))
        throw Error("wgc: hub: the file list of " + repo + " names an unsafe path '" + f.path + "'");
      const json::Value* size = e.find("size");
      if (!size || !size->is_int() || size->as_int() < 0)
        throw Error("wgc: hub: the file list of " + repo + " gives no size for '" + f.path + "'");
      f.size = uint64_t(size->as_int());
      f.git_sha1 = lower(e.get_string("oid"));
      if (f.git_sha1.empty())
        throw Error("wgc: hub: the file list of " + repo + " gives no oid (hash) for '" + f.path + "'");
      if (const json::Value* lfs = e.find("lfs"); lfs && lfs->is_object()) {
        f.sha256 = lower(lfs->get_string("oid"));
        if (lfs->find("size") && lfs->get_int("size", -1) != int64_t(f.size))
          throw Error("wgc: hub: the file list of " + repo + " gives two sizes for '" + f.path + "'");
      }
      if (files.size() == kMaxHubFiles)
        throw Error("wgc: hub: " + repo + " has more than " + std::to_string(kMaxHubFiles) + " files");
      files.push_back(std::move(f));
    }
    url = next_page(r.headers);
    if (!url.empty()) url = resolve_location(split_url(r.url), url);
  }
  return files;
}

std::vector<HubFile> hub_files_for(const HubRef& ref, const std::vector<HubFile>& listing) {
  auto named = [&](std::string_view p) -> const HubFile* {
    for (const auto& f : listing)
      if (f.path == p) return &f;
    return nullptr;
  };
  auto with_ext = [&](std::string_view ext) {
    std::string s;
    for (const auto& f : listing)
      if (f.path.ends_with(ext)) s += (s.empty() ? "" : ", ") + f.path;
    return s;
  };
  if (!ref.file.empty()) {
    if (const HubFile* f = named(ref.file)) return {*f};
    std::string ggufs = with_ext(".gguf");
    throw Error("wgc: hub: " + ref.repo + " has no file '" + ref.file + "'" +
                (ggufs.empty() ? "" : "; its GGUF files: " + ggufs));
  }
  if (!named("config.json")) {
    std::string ggufs = with_ext(".gguf");
    if (!ggufs.empty())
      throw Error("wgc: hub: " + ref.repo + " holds GGUF files, not a model folder: pull one of them as " + ref.repo +
                  "/FILE (" + ggufs + ")");
    throw Error("wgc: hub: " + ref.repo + " has no config.json: not a Hugging Face model folder");
  }
  static const char* kFolderFiles[] = {"config.json",           "generation_config.json",      "tokenizer.json",
                                       "tokenizer_config.json", "special_tokens_map.json",     "chat_template.jinja",
                                       "chat_template.json",    "model.safetensors.index.json"};
  std::vector<HubFile> out;
  for (const char* n : kFolderFiles)
    if (const HubFile* f = named(n)) out.push_back(*f);
  bool weights = false;
  for (const auto& f : listing)
    if (f.path.find('/') == std::string::npos && f.path.ends_with(".safetensors")) {
      out.push_back(f);
      weights = true;
    }
  if (!weights) {
    std::string ggufs = with_ext(".gguf");
    throw Error(
        "wgc: hub: " + ref.repo + " has no .safetensors weights" +
        (ggufs.empty() ? std::string() : "; pull one of its GGUF files as " + ref.repo + "/FILE (" + ggufs + ")"));
  }
  return out;
}

// --- pulling ---------------------------------------------------------------------------------------

namespace {

// The first byte a 206 response holds ("bytes 100-199/200" -> 100), or -1.
int64_t range_start(const std::string& content_range) {
  if (!content_range.starts_with("bytes ")) return -1;
  char* end = nullptr;
  long long v = std::strtoll(content_range.c_str() + 6, &end, 10);
  return end && *end == '-' && v >= 0 ? v : -1;
}

// One file into `dest` (through dest.part): true when it resumed an earlier .part.
bool pull_file(const Http& http, const HubOptions& o, const std::string& repo, const HubFile& f, const fs::path& dest,
               uint64_t& received) {
  fs::path part = dest;
  part += ".part";
  std::error_code ec;
  fs::create_directories(dest.parent_path(), ec);
  if (ec) throw Error(dest.parent_path().string() + ": cannot create the folder: " + ec.message());
  const std::string url = file_url(o, repo, f.path);
  const std::string name = repo + "/" + f.path;
  bool resumed = false;
  Progress bar("pulling " + f.path, f.size, Progress::Unit::Bytes);
  for (int attempt = 1;; ++attempt) {
    uint64_t have = fs::is_regular_file(part, ec) ? fs::file_size(part, ec) : 0;
    if (ec || have > f.size) {  // not what this file can be: start over
      fs::remove(part, ec);
      have = 0;
    }
    if (have > 0 && attempt == 1) resumed = true;
    if (o.progress) bar.set(have);
    httplib::Headers headers;
    if (have > 0 && have < f.size) headers.emplace("Range", "bytes=" + std::to_string(have) + "-");
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> out(nullptr, &std::fclose);
    uint64_t written = have;
    std::string failure;  // why the body was refused
    Http::Reply r;
    if (have < f.size) {
      r = http.get(
          url, headers,
          [&](const Http::Reply& head) {
            if (head.status == 206 && range_start(head.header("Content-Range")) != int64_t(have)) {
              failure = "the server resumed at another byte than " + std::to_string(have) + " (" +
                        head.header("Content-Range") + ")";
              return false;
            }
            if (head.status != 206) written = 0;  // the whole file comes: it replaces the .part
            out.reset(std::fopen(part.c_str(), written > 0 ? "ab" : "wb"));
            if (!out) failure = part.string() + ": cannot write: " + std::strerror(errno);
            return bool(out);
          },
          [&](const char* d, size_t n) {
            if (written + n > f.size) {
              failure = "the server sent more than the " + std::to_string(f.size) + " bytes the file list gives";
              return false;
            }
            if (std::fwrite(d, 1, n, out.get()) != n) {
              failure = part.string() + ": write failed: " + std::strerror(errno);
              return false;
            }
            written += n;
            received += n;
            if (o.progress) bar.add(n);
            return true;
          });
      if (out && std::fflush(out.get()) != 0 && failure.empty()) failure = part.string() + ": write failed";
      out.reset();
      if (!failure.empty()) {
        fs::remove(part, ec);
        throw Error("wgc: hub: " + name + ": " + failure + " (from " + r.url + ")");
      }
      if (r.status != 200 && r.status != 206) throw Error("wgc: hub: " + status_text(name, r));
    }
    written = fs::file_size(part, ec);
    if (written == f.size) break;
    if (attempt >= o.attempts)
      throw Error("wgc: hub: " + name + " stopped at " + std::to_string(written) + " of " + std::to_string(f.size) +
                  " bytes after " + std::to_string(attempt) + " tries (" + (r.cut ? r.error : "short body") +
                  "); the next pull resumes from " + part.string());
  }
  if (o.progress) bar.finish();
  Digests d = digests(part, f.size);
  const bool lfs = !f.sha256.empty();
  const std::string& want = lfs ? f.sha256 : f.git_sha1;
  const std::string& got = lfs ? d.sha256 : d.git_sha1;
  if (got != want) {
    fs::remove(part, ec);
    throw Error("wgc: hub: " + name + ": " + (lfs ? "sha256 " : "git sha1 ") + got + " does not match the hub's " +
                want + " (the download was removed)");
  }
  fs::rename(part, dest, ec);
  if (ec) throw Error(dest.string() + ": cannot rename the download onto it: " + ec.message());
  return resumed;
}

}  // namespace

// --- what the cache holds ------------------------------------------------------------------------

std::vector<CachedModel> hub_cached_models(const HubOptions& o) {
  std::vector<CachedModel> out;
  const fs::path models = hub_cache_dir(o) / "models";
  std::error_code ec;
  if (!fs::is_directory(models, ec)) return out;
  auto size_of = [](const fs::path& p) {
    std::error_code e;
    uint64_t n = fs::file_size(p, e);
    return e ? uint64_t(0) : n;
  };
  for (const auto& owner : fs::directory_iterator(models, ec)) {
    if (!owner.is_directory(ec) || owner.is_symlink(ec)) continue;
    for (const auto& repo_dir : fs::directory_iterator(owner.path(), ec)) {
      if (!repo_dir.is_directory(ec) || repo_dir.is_symlink(ec)) continue;
      auto repo = parse_hub_ref(owner.path().filename().string() + "/" + repo_dir.path().filename().string());
      if (!repo) continue;  // not a folder wgc made
      std::set<fs::path> in_folder;
      if (auto folder = hub_cached(*repo, o)) {
        CachedModel m{*repo, *folder, 0, true};
        json::Value marker = json::parse_file(*folder / kPulledMarker);
        for (const auto& f : marker["files"].items()) {
          in_folder.insert(*folder / f.as_string());
          m.bytes += size_of(*folder / f.as_string());
        }
        out.push_back(std::move(m));
      }
      for (auto it = fs::recursive_directory_iterator(repo_dir.path(), ec); !ec && it != fs::end(it);
           it.increment(ec)) {
        if (!it->is_regular_file(ec) || in_folder.count(it->path())) continue;
        std::string rel = fs::relative(it->path(), repo_dir.path(), ec).generic_string();
        const bool part = rel.ends_with(".part");
        if (part) rel.resize(rel.size() - 5);
        if (!part && !rel.ends_with(".gguf")) continue;  // a folder pull's files are listed above
        if (!safe_repo_path(rel)) continue;
        out.push_back({{repo->repo, rel}, it->path(), size_of(it->path()), !part});
      }
    }
  }
  std::sort(out.begin(), out.end(), [](const CachedModel& a, const CachedModel& b) {
    return std::pair(a.ref.str(), a.complete) < std::pair(b.ref.str(), b.complete);
  });
  return out;
}

std::vector<CachedModel> hub_find_name(std::string_view name, const HubOptions& o) {
  std::vector<CachedModel> found;
  if (name.empty()) return found;
  for (auto& m : hub_cached_models(o)) {
    if (!m.complete) continue;
    std::string last =
        m.ref.file.empty() ? m.ref.repo.substr(m.ref.repo.find('/') + 1) : fs::path(m.ref.file).filename().string();
    std::string stem = m.ref.file.empty() ? last : fs::path(last).stem().string();
    if (last == name || stem == name) found.push_back(std::move(m));
  }
  return found;
}

uint64_t hub_remove(const HubRef& ref, const HubOptions& o) {
  const fs::path target = hub_local_path(ref, o);
  std::error_code ec;
  uint64_t freed = 0;
  auto remove_file = [&](const fs::path& p) {
    std::error_code e;
    if (!fs::is_regular_file(fs::symlink_status(p, e))) return false;
    uint64_t n = fs::file_size(p, e);
    if (!fs::remove(p, e)) throw Error("wgc: cannot remove " + p.string() + ": " + e.message());
    freed += n;
    return true;
  };
  bool any = false;
  if (!ref.file.empty()) {
    any = remove_file(target);
    any = remove_file(fs::path(target.string() + ".part")) || any;
  } else if (fs::is_directory(fs::symlink_status(target, ec))) {
    for (auto it = fs::recursive_directory_iterator(target, ec); !ec && it != fs::end(it); it.increment(ec))
      if (it->is_regular_file(ec) && !it->is_symlink(ec)) freed += it->file_size(ec);
    fs::remove_all(target, ec);
    if (ec) throw Error("wgc: cannot remove " + target.string() + ": " + ec.message());
    any = true;
  }
  if (!any) throw Error("wgc: " + ref.str() + " is not in the cache (" + (hub_cache_dir(o) / "models").string() + ")");
  // Folders left empty, up to the cache's models folder.
  const fs::path models = hub_cache_dir(o) / "models";
  for (fs::path d = target.parent_path(); d != models && d.has_parent_path(); d = d.parent_path()) {
    if (!fs::is_directory(d, ec) || !fs::is_empty(d, ec)) break;
    fs::remove(d, ec);
  }
  return freed;
}

PullReport hub_pull(const HubRef& ref, const HubOptions& o, const std::function<void(const HubFile&)>& on_file) {
  Http http(o);
  std::vector<HubFile> files = hub_files_for(ref, hub_list(ref.repo, o));
  const fs::path dir = hub_local_path({ref.repo, ""}, o);
  PullReport r;
  r.path = hub_local_path(ref, o);
  for (const auto& f : files) {
    fs::path dest = dir / f.path;
    std::error_code ec;
    if (fs::is_regular_file(dest, ec) && fs::file_size(dest, ec) == f.size) {
      ++r.present;
      continue;
    }
    if (on_file) on_file(f);
    if (pull_file(http, o, ref.repo, f, dest, r.bytes))
      ++r.resumed;
    else
      ++r.downloaded;
  }
  if (ref.file.empty()) {  // the folder is complete: say which files make it
    json::Value m = json::Value::object();
    m.set("repo", ref.repo);
    m.set("revision", o.revision);
    m.set("endpoint", hub_endpoint(o));
    json::Value list = json::Value::array();
    for (const auto& f : files) list.push_back(f.path);
    m.set("files", std::move(list));
    write_file(dir / kPulledMarker, m.dump(1) + "\n", Overwrite::Yes);
  }
  return r;
}

}  // namespace wgc::llm
