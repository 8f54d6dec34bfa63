// llm/hub and `wgc pull` against a stand-in for the Hugging Face Hub: a cpp-httplib server on
// loopback, started here, serving the tiny fixtures (../shared/fixtures) in the hub's layout (the
// tree API with sha256/git-sha1 ids, resolve URLs that redirect to a "CDN" path with range
// support). Full downloads, a download cut midway and resumed, a wrong sha256 refused, missing
// files and repos named, and --model owner/name finding the pulled copy. No GPU except the last
// CLI step.
#include "llm/formats/model_file.h"
#include "llm/hub/hub.h"
#include "test_util.h"
#include "util/json.h"

#include <httplib.h>
#include <openssl/evp.h>

#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <thread>

using namespace wgc;
using namespace wgc::llm;
namespace fs = std::filesystem;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

std::string hex_digest(const EVP_MD* md, const std::string& data) {
  unsigned char d[EVP_MAX_MD_SIZE];
  unsigned n = 0;
  EVP_Digest(data.data(), data.size(), d, &n, md, nullptr);
  static const char* h = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < n; ++i) (out += h[d[i] >> 4]) += h[d[i] & 15];
  return out;
}

// The hub stand-in: repos of files held in memory.
class FakeHub {
 public:
  struct File {
    File(std::string b = "", bool l = false) : bytes(std::move(b)), lfs(l) {}
    std::string bytes;
    bool lfs = false;
    std::string sha256_override;  // a wrong lfs.oid in the listing
    std::string oid_override;     // a wrong git blob id in the listing
  };
  std::map<std::string, std::map<std::string, File>> repos;  // repo -> path -> file
  std::set<std::string> cut_once;                            // "repo/path": the first GET stops halfway
  std::vector<std::string> ranges;                           // Range headers of file GETs, in order
  std::mutex mu;

  FakeHub() {
    server_.Get(
        R"(/api/models/([^/]+/[^/]+)/tree/([^/]+))", [this](const httplib::Request& req, httplib::Response& res) {
          std::lock_guard lock(mu);
          auto it = repos.find(req.matches[1]);
          if (it == repos.end() || req.matches[2] != "main" || req.get_param_value("recursive") != "true") {
            res.status = 404;
            res.set_content(R"({"error":"Repository not found"})", "application/json");
            return;
          }
          json::Value list = json::Value::array();
          std::set<std::string> dirs;
          for (const auto& [path, f] : it->second) {
            for (size_t s = path.find('/'); s != std::string::npos; s = path.find('/', s + 1))
              dirs.insert(path.substr(0, s));
            json::Value e = json::Value::object();
            e.set("type", "file");
            e.set("path", path);
            e.set("size", uint64_t(f.bytes.size()));
            e.set("oid", !f.oid_override.empty() ? f.oid_override
                                                 : hex_digest(EVP_sha1(), "blob " + std::to_string(f.bytes.size()) +
                                                                              std::string(1, '\0') + f.bytes));
            if (f.lfs) {
              json::Value l = json::Value::object();
              l.set("oid", f.sha256_override.empty() ? hex_digest(EVP_sha256(), f.bytes) : f.sha256_override);
              l.set("size", uint64_t(f.bytes.size()));
              e.set("lfs", std::move(l));
            }
            list.push_back(std::move(e));
          }
          for (const auto& d : dirs) {
            json::Value e = json::Value::object();
            e.set("type", "directory");
            e.set("path", d);
            list.push_back(std::move(e));
          }
          res.set_content(list.dump(), "application/json");
        });
    // resolve URLs redirect to the "CDN" (as the hub does for LFS files), which serves the bytes.
    server_.Get(R"(/([^/]+/[^/]+)/resolve/main/(.+))", [](const httplib::Request& req, httplib::Response& res) {
      res.status = 302;
      res.set_header("Location", "/cdn/" + std::string(req.matches[1]) + "/" + std::string(req.matches[2]));
    });
    server_.Get(R"(/cdn/([^/]+/[^/]+)/(.+))", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard lock(mu);
      std::string repo = req.matches[1], path = req.matches[2];
      auto r = repos.find(repo);
      if (r == repos.end() || !r->second.count(path)) {
        res.status = 404;
        res.set_content("Entry not found", "text/plain");
        return;
      }
      ranges.push_back(req.get_header_value("Range"));
      const std::string* bytes = &r->second.at(path).bytes;
      bool cut = cut_once.erase(repo + "/" + path) > 0;
      res.set_content_provider(bytes->size(), "application/octet-stream",
                               [bytes, cut](size_t offset, size_t length, httplib::DataSink& sink) {
                                 size_t end = offset + length;
                                 if (cut) end = std::min(end, bytes->size() / 2);  // then drop the connection
                                 for (size_t at = offset; at < end; at += 65536)
                                   sink.write(bytes->data() + at, std::min<size_t>(65536, end - at));
                                 return !cut;
                               });
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~FakeHub() {
    server_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
};

fs::path fixture(const std::string& rel) { return test::fixtures_dir() / rel; }

// The hub's layout of the tiny Llama 2: a model folder (config, weights) plus two GGUF files.
void add_tiny_llama2(FakeHub& hub, const std::string& repo) {
  auto& r = hub.repos[repo];
  for (const char* f : {"config.json", "generation_config.json"}) r[f] = {slurp(fixture("tiny-llama2-f32") / f), false};
  r["model.safetensors"] = {slurp(fixture("tiny-llama2-f32/model.safetensors")), true};
  r["tiny-llama2-f32-q8_0.gguf"] = {slurp(fixture("tiny-llama2-f32/tiny-llama2-f32-q8_0.gguf")), true};
  r["gguf/tiny-llama2-f32-f32.gguf"] = {slurp(fixture("tiny-llama2-f32/tiny-llama2-f32-f32.gguf")), true};
  r["README.md"] = {"# tiny\n", false};
}

HubOptions options(const FakeHub& hub, const fs::path& cache) {
  HubOptions o;
  o.endpoint = hub.url();
  o.cache = cache;
  o.progress = false;
  o.timeout_s = 10;
  return o;
}

fs::path fresh(const std::string& name) {
  auto d = test::temp_dir(name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

class Hub : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(fixture("tiny-llama2-f32/model.safetensors")))
      GTEST_SKIP() << "fixture not found: " << fixture("tiny-llama2-f32") << " (set WGC_FIXTURES)";
  }
};

TEST(HubRef, ParsesRepoAndFile) {
  auto r = parse_hub_ref("Qwen/Qwen2.5-0.5B-Instruct-GGUF/qwen2.5-0.5b-instruct-q8_0.gguf");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->repo, "Qwen/Qwen2.5-0.5B-Instruct-GGUF");
  EXPECT_EQ(r->file, "qwen2.5-0.5b-instruct-q8_0.gguf");
  EXPECT_EQ(parse_hub_ref("a/b/sub/c.gguf")->file, "sub/c.gguf");
  EXPECT_EQ(parse_hub_ref("a/b")->file, "");
  for (const char* bad : {"", "model.gguf", "/abs/path", "./x/y", "../x/y", "a/../b", "a//b", "a/b/", "~/x/y", "a b/c",
                          "a/b/..", "a/b/c\\d"})
    EXPECT_FALSE(parse_hub_ref(bad)) << bad;
}

TEST_F(Hub, PullsAFolderAndAFileAndFindsThemInTheCache) {
  FakeHub hub;
  add_tiny_llama2(hub, "test/tiny-llama2");
  auto cache = fresh("hub_full");
  HubOptions o = options(hub, cache);

  auto list = hub_list("test/tiny-llama2", o);
  EXPECT_EQ(list.size(), 6u);  // files only, also in subfolders
  auto folder = *parse_hub_ref("test/tiny-llama2");
  EXPECT_FALSE(hub_cached(folder, o));
  PullReport r = hub_pull(folder, o);
  EXPECT_EQ(r.path, cache / "models/test/tiny-llama2");
  EXPECT_EQ(r.downloaded, 3);  // config.json, generation_config.json, model.safetensors (no README, no GGUF)
  EXPECT_EQ(slurp(r.path / "model.safetensors"), slurp(fixture("tiny-llama2-f32/model.safetensors")));
  EXPECT_FALSE(fs::exists(r.path / "README.md"));
  EXPECT_EQ(hub_cached(folder, o), r.path);
  ModelFile m = open_model(r.path, {false, false});
  EXPECT_EQ(m.config().n_layers, 2);

  auto file = *parse_hub_ref("test/tiny-llama2/gguf/tiny-llama2-f32-f32.gguf");
  PullReport g = hub_pull(file, o);
  EXPECT_EQ(g.path, cache / "models/test/tiny-llama2/gguf/tiny-llama2-f32-f32.gguf");
  EXPECT_EQ(slurp(g.path), slurp(fixture("tiny-llama2-f32/tiny-llama2-f32-f32.gguf")));
  EXPECT_EQ(hub_cached(file, o), g.path);

  // Pulling again fetches nothing.
  size_t gets = hub.ranges.size();
  PullReport again = hub_pull(folder, o);
  EXPECT_EQ(again.present, 3);
  EXPECT_EQ(again.downloaded, 0);
  EXPECT_EQ(hub.ranges.size(), gets);
  // No leftovers beside the files.
  for (const auto& e : fs::recursive_directory_iterator(cache))
    EXPECT_FALSE(e.path().string().ends_with(".part")) << e.path();
}

// A connection dropped halfway: the pull retries from where the bytes stopped (a range request),
// and a .part left by an interrupted pull resumes the same way.
TEST_F(Hub, ResumesACutDownload) {
  FakeHub hub;
  add_tiny_llama2(hub, "test/tiny-llama2");
  const std::string want = hub.repos["test/tiny-llama2"]["tiny-llama2-f32-q8_0.gguf"].bytes;
  auto cache = fresh("hub_cut");
  HubOptions o = options(hub, cache);
  auto ref = *parse_hub_ref("test/tiny-llama2/tiny-llama2-f32-q8_0.gguf");

  hub.cut_once.insert("test/tiny-llama2/tiny-llama2-f32-q8_0.gguf");
  PullReport r = hub_pull(ref, o);
  EXPECT_EQ(slurp(r.path), want);
  ASSERT_EQ(hub.ranges.size(), 2u);
  EXPECT_EQ(hub.ranges[0], "");
  EXPECT_EQ(hub.ranges[1], "bytes=" + std::to_string(want.size() / 2) + "-");

  // One try only, cut: the .part stays (no final file), and the next pull resumes it.
  fs::remove(r.path);
  hub.ranges.clear();
  hub.cut_once.insert("test/tiny-llama2/tiny-llama2-f32-q8_0.gguf");
  o.attempts = 1;
  try {
    hub_pull(ref, o);
    FAIL() << "a cut download was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("resumes"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(r.path));
  fs::path part = r.path;
  part += ".part";
  ASSERT_TRUE(fs::exists(part));
  EXPECT_EQ(fs::file_size(part), want.size() / 2);
  EXPECT_FALSE(hub_cached(ref, o));
  PullReport resumed = hub_pull(ref, o);
  EXPECT_EQ(resumed.resumed, 1);
  EXPECT_EQ(resumed.bytes, want.size() - want.size() / 2);
  EXPECT_EQ(slurp(resumed.path), want);
  EXPECT_FALSE(fs::exists(part));
}

TEST_F(Hub, AWrongSha256IsRefused) {
  FakeHub hub;
  add_tiny_llama2(hub, "test/tiny-llama2");
  hub.repos["test/tiny-llama2"]["tiny-llama2-f32-q8_0.gguf"].sha256_override = std::string(64, 'a');
  auto cache = fresh("hub_sha");
  HubOptions o = options(hub, cache);
  auto ref = *parse_hub_ref("test/tiny-llama2/tiny-llama2-f32-q8_0.gguf");
  try {
    hub_pull(ref, o);
    FAIL() << "a file with the wrong sha256 was accepted";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("sha256"), std::string::npos) << m;
    EXPECT_NE(m.find(std::string(64, 'a')), std::string::npos) << m;
    EXPECT_NE(m.find("tiny-llama2-f32-q8_0.gguf"), std::string::npos) << m;
  }
  EXPECT_FALSE(hub_cached(ref, o));
  EXPECT_TRUE(fs::is_empty(cache / "models/test/tiny-llama2"));  // neither the file nor a .part
  // A small (non-LFS) file is checked by its git blob id.
  hub.repos["test/tiny-llama2"]["config.json"].oid_override = std::string(40, 'c');
  try {
    hub_pull(*parse_hub_ref("test/tiny-llama2"), o);
    FAIL() << "a file with the wrong git blob id was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("git sha1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("config.json"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(hub_cached(*parse_hub_ref("test/tiny-llama2"), o));
}

TEST_F(Hub, MissingThingsAreNamed) {
  FakeHub hub;
  add_tiny_llama2(hub, "test/tiny-llama2");
  hub.repos["test/only-gguf"]["a-q8_0.gguf"] = {"GGUF....", true};
  auto cache = fresh("hub_missing");
  HubOptions o = options(hub, cache);
  auto message = [&](const std::string& ref) -> std::string {
    try {
      hub_pull(*parse_hub_ref(ref), o);
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  };
  std::string m = message("test/tiny-llama2/nope.gguf");
  EXPECT_NE(m.find("has no file 'nope.gguf'"), std::string::npos) << m;
  EXPECT_NE(m.find("tiny-llama2-f32-q8_0.gguf"), std::string::npos) << m;  // lists what there is
  m = message("test/no-such-repo");
  EXPECT_NE(m.find("HTTP 404"), std::string::npos) << m;
  EXPECT_NE(m.find("test/no-such-repo"), std::string::npos) << m;
  m = message("test/only-gguf");
  EXPECT_NE(m.find("holds GGUF files"), std::string::npos) << m;
  EXPECT_NE(m.find("a-q8_0.gguf"), std::string::npos) << m;
  o.endpoint = "http://127.0.0.1:1";  // nothing listens there
  m = message("test/tiny-llama2");
  EXPECT_NE(m.find("127.0.0.1:1"), std::string::npos) << m;
}

// wgc pull through WGC_HF_ENDPOINT and WGC_CACHE, then --model owner/name[/FILE] anywhere a model
// goes; a model not pulled says how to pull it.
TEST_F(Hub, PullCommandAndModelByName) {
  FakeHub hub;
  add_tiny_llama2(hub, "test/tiny-llama2");
  auto cache = fresh("hub_cli");
  std::string env = "WGC_HF_ENDPOINT=" + hub.url() + " WGC_CACHE=" + test::quote(cache.string()) + " ";
  const std::string gguf = "test/tiny-llama2/tiny-llama2-f32-q8_0.gguf";
  auto missing = test::run_cli("inspect " + gguf, "", env);
  EXPECT_EQ(missing.rc, 1);
  EXPECT_NE(missing.err.find("wgc pull " + gguf), std::string::npos) << missing.err;
  auto pulled = test::run_cli("pull " + gguf, "", env);
  ASSERT_EQ(pulled.rc, 0) << pulled.err;
  EXPECT_EQ(pulled.out, (cache / "models" / gguf).string() + "\n");
  EXPECT_NE(pulled.err.find("1 downloaded"), std::string::npos) << pulled.err;
  auto list = test::run_cli("pull --list test/tiny-llama2", "", env);
  EXPECT_NE(list.out.find("gguf/tiny-llama2-f32-f32.gguf"), std::string::npos) << list.out;
  auto inspect = test::run_cli("inspect --json " + gguf, "", env);
  ASSERT_EQ(inspect.rc, 0) << inspect.err;
  EXPECT_EQ(json::parse(inspect.out)["config"]["n_layers"].as_int(), 2);
  auto gen = test::run_cli("generate --model " + gguf + " --tokens 1,2,3 --temp 0 -n 2 --ignore-eos --json", "", env);
  ASSERT_EQ(gen.rc, 0) << gen.err;
  EXPECT_EQ(json::parse(gen.out)["ids"].size(), 2u);
  auto bad = test::run_cli("pull ./not/a/repo", "", env);
  EXPECT_EQ(bad.rc, 2);
}

}  // namespace
