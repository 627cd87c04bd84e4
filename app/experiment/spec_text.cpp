#include "app/experiment/spec_text.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <string_view>

#include "core/error.h"
#include "core/interrupt.h"

namespace wb::app {

std::pair<int, int> line_col(const std::string& text, size_t byte) {
  int line = 1, col = 1;
  for (size_t i = 0; i < byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return {line, col};
}

namespace {

// A string as JSON would write it, control characters (U+0000-U+001F, U+007F) escaped:
// what a message shows of a value that may hold them.
std::string escaped(const std::string& v) {
  std::string out = "\"";
  for (unsigned char ch : v) {
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += static_cast<char>(ch);
    } else if (ch < 0x20 || ch == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04X", ch);
      out += buf;
    } else {
      out += static_cast<char>(ch);
    }
  }
  return out + "\"";
}

// The spec is UTF-8 text: a UTF-16 or Latin-1 file is named as
// such, rather than reported as malformed JSON at its first byte. A UTF-8 byte-order mark
// is allowed (the JSON parser skips it).
void check_utf8(const std::string& text, const std::string& file) {
  auto starts = [&](const char* bom, size_t n) { return text.size() >= n && text.compare(0, n, bom, n) == 0; };
  const char* enc = starts("\xFF\xFE\x00\x00", 4)   ? "UTF-32 (little-endian)"
                    : starts("\x00\x00\xFE\xFF", 4) ? "UTF-32 (big-endian)"
                    : starts("\xFF\xFE", 2)         ? "UTF-16 (little-endian)"
                    : starts("\xFE\xFF", 2)         ? "UTF-16 (big-endian)"
                                                    : nullptr;
  if (enc)
    throw UserError(file, std::string("not UTF-8: the file starts with a ") + enc +
                              " byte-order mark; save the spec as UTF-8");
  const auto* t = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  for (size_t i = 0; i < n;) {
    const unsigned char c = t[i];
    size_t len = 0;
    uint32_t cp = 0, lo = 0;
    if (c == 0) {
      len = 0;  // a NUL byte: no JSON text has one (UTF-16 has many)
    } else if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      len = 2, cp = c & 0x1F, lo = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3, cp = c & 0x0F, lo = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4, cp = c & 0x07, lo = 0x10000;
    }
    bool ok = len > 0 && i + len <= n;
    for (size_t k = 1; ok && k < len; ++k) {
      ok = (t[i + k] & 0xC0) == 0x80;
      cp = (cp << 6) | (t[i + k] & 0x3F);
    }
    // Overlong forms, UTF-16 surrogates and code points above U+10FFFF are not UTF-8.
    ok = ok && cp >= lo && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);
    if (!ok) {
      auto [line, col] = line_col(text, i);
      char buf[8];
      std::snprintf(buf, sizeof buf, "0x%02X", c);
      throw UserError(file + ":" + std::to_string(line) + ":" + std::to_string(col),
                      c == 0 ? std::string("not UTF-8: a NUL byte (is the file UTF-16?); save the "
                                           "spec as UTF-8")
                             : std::string("not UTF-8: invalid byte ") + buf +
                                   " (a Latin-1 or other 8-bit encoding?); save the spec as UTF-8");
    }
    i += len;
  }
}

// One pass over the (already parsed, valid, at most kMaxDepth deep) JSON text, for what the
// parsed value no longer shows:
//  - duplicate keys: the parser keeps the last one silently; refused as unknown keys are,
//    with both lines;
//  - control characters (U+0000-U+001F, U+007F) in any string, key or value: a NUL cut a
//    name short ("a\u0000b" wrote a file called "a") and messages too.
class TextChecks {
 public:
  TextChecks(const std::string& text, const std::string& file) : t_(text), file_(file) {
    if (t_.compare(0, 3, "\xEF\xBB\xBF") == 0) i_ = 3;  // UTF-8 byte-order mark
  }
  void run() { value("$"); }

 private:
  void ws() {
    while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\t' || t_[i_] == '\n' || t_[i_] == '\r')) ++i_;
  }
  // At a '"': the decoded string; i_ moves past the closing quote.
  std::string str() {
    const size_t at = i_++;
    while (i_ < t_.size() && t_[i_] != '"') i_ += t_[i_] == '\\' ? 2 : 1;
    ++i_;
    return json::parse(t_.substr(at, i_ - at)).get<std::string>();
  }
  int line(size_t at) const { return line_col(t_, at).first; }
  static bool has_control(const std::string& v) {
    for (unsigned char ch : v)
      if (ch < 0x20 || ch == 0x7F) return true;
    return false;
  }
  [[noreturn]] void control(const std::string& path, const std::string& v, size_t at, bool key) {
    unsigned char bad = 0;
    for (unsigned char ch : v)
      if (ch < 0x20 || ch == 0x7F) {
        bad = ch;
        break;
      }
    char cp[8];
    std::snprintf(cp, sizeof cp, "U+%04X", bad);
    throw UserError(file_ + ": " + path,
                    std::string(key ? "key " : "string ") + escaped(v) + " (line " +
                        std::to_string(line(at)) + ") contains the control character " + cp +
                        ": control characters (U+0000-U+001F, U+007F) are not allowed");
  }
  void value(const std::string& path) {
    ws();
    if (i_ >= t_.size()) return;
    const char c = t_[i_];
    if (c == '{') {
      ++i_;
      std::map<std::string, size_t> seen;
      for (;;) {
        ws();
        if (t_[i_] == '}') break;
        const size_t at = i_;
        const std::string k = str();
        if (has_control(k)) control(path + "[" + escaped(k) + "]", k, at, true);
        const std::string kp = core::path_key(path, k);
        if (auto [it, fresh] = seen.emplace(k, at); !fresh)
          throw UserError(file_ + ": " + kp,
                          "duplicate key \"" + k + "\" (line " + std::to_string(line(at)) +
                              "; first at line " + std::to_string(line(it->second)) +
                              "): a key may appear once in an object");
        ws();
        ++i_;  // ':'
        value(kp);
        ws();
        if (t_[i_] == ',') ++i_;
      }
      ++i_;
    } else if (c == '[') {
      ++i_;
      for (size_t k = 0;; ++k) {
        ws();
        if (t_[i_] == ']') break;
        value(core::path_index(path, k));
        ws();
        if (t_[i_] == ',') ++i_;
      }
      ++i_;
    } else if (c == '"') {
      const size_t at = i_;
      const std::string v = str();
      if (has_control(v)) control(path, v, at, false);
    } else {  // number, true, false, null
      while (i_ < t_.size() && std::string_view(",]} \t\n\r").find(t_[i_]) == std::string_view::npos) ++i_;
    }
  }

  const std::string& t_;
  const std::string& file_;
  size_t i_ = 0;
};

}  // namespace

json parse_spec_text(const std::string& text, const std::string& file) {
  check_utf8(text, file);
  json raw;
  try {
    // Parsing a large spec takes seconds: it answers a signal (checked every 64k events).
    size_t events = 0;
    raw = json::parse(text, [&events](int, json::parse_event_t, json&) {
      if ((++events & 0xFFFF) == 0) core::throw_if_interrupted();
      return true;
    });
  } catch (const json::parse_error& pe) {
    auto [line, col] = line_col(text, pe.byte == 0 ? 0 : pe.byte - 1);
    std::string msg = pe.what();
    // nlohmann: "[json.exception.parse_error.101] parse error at line L, column C: what"
    auto pos = msg.find("column");
    if (pos != std::string::npos && msg.find(": ", pos) != std::string::npos)
      msg = msg.substr(msg.find(": ", pos) + 2);
    throw UserError(file + ":" + std::to_string(line) + ":" + std::to_string(col),
                    "malformed JSON: " + msg);
  } catch (const json::exception& je) {
    // The parser also throws out_of_range.406 for a number too large for a double
    // ("number overflow parsing '1e999'"); it has no byte offset, so locate the quoted
    // token in the text (found by fuzz_spec: it escaped as an internal error).
    std::string msg = je.what();
    if (auto p = msg.find("] "); p != std::string::npos) msg = msg.substr(p + 2);
    std::string where = file;
    const size_t q0 = msg.find('\''), q1 = msg.rfind('\'');
    if (q0 != std::string::npos && q1 > q0 + 1) {
      if (size_t at = text.find(msg.substr(q0 + 1, q1 - q0 - 1)); at != std::string::npos) {
        auto [line, col] = line_col(text, at);
        where += ":" + std::to_string(line) + ":" + std::to_string(col);
      }
    }
    throw UserError(where, "malformed JSON: " + msg);
  }
  // Nesting depth: parsing is iterative, but copying or printing a json value recurses
  // once per level, so a spec nested thousands deep overflowed the stack (fuzz_spec under
  // ASan, 32000 levels). A real spec is 5 levels deep; the text is valid JSON here, so
  // a plain scan that skips strings counts the levels exactly.
  constexpr int kMaxDepth = 64;
  {
    int depth = 0;
    bool in_string = false, escaped = false;
    for (size_t i = 0; i < text.size(); ++i) {
      const char c = text[i];
      if (in_string) {
        if (escaped) escaped = false;
        else if (c == '\\') escaped = true;
        else if (c == '"') in_string = false;
      } else if (c == '"') {
        in_string = true;
      } else if (c == '[' || c == '{') {
        if (++depth > kMaxDepth) {
          auto [line, col] = line_col(text, i);
          throw UserError(file + ":" + std::to_string(line) + ":" + std::to_string(col),
                          "malformed JSON: nested deeper than " + std::to_string(kMaxDepth) +
                              " levels of objects/lists");
        }
      } else if (c == ']' || c == '}') {
        --depth;
      }
    }
  }
  TextChecks(text, file).run();
  return raw;
}

std::string read_spec_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw UserError(path, "no such file");
  if (std::filesystem::is_directory(path, ec)) throw UserError(path, "is a directory, expected a JSON file");
  // Open first, then check what was opened (O_NONBLOCK: opening a FIFO does not wait).
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw UserError(path, "cannot open for reading: " + std::string(std::strerror(errno)));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw UserError(path, "is not a regular file (a device, FIFO or socket): a spec is a JSON file");
  }
  if (static_cast<uint64_t>(st.st_size) > kMaxSpecBytes) {
    ::close(fd);
    throw UserError(path, "is " + std::to_string(st.st_size / (1 << 20)) + " MiB, above the " +
                              std::to_string(kMaxSpecBytes >> 20) + " MiB a spec may have");
  }
  std::string text;
  char chunk[1 << 16];
  for (;;) {
    if (core::interrupt_requested()) {
      ::close(fd);
      throw core::Interrupted();
    }
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      throw UserError(path, "cannot read: " + std::string(std::strerror(err)));
    }
    if (n == 0) break;
    text.append(chunk, static_cast<size_t>(n));
    if (text.size() > kMaxSpecBytes) {  // grew while being read
      ::close(fd);
      throw UserError(path, "is above the " + std::to_string(kMaxSpecBytes >> 20) +
                                " MiB a spec may have");
    }
  }
  ::close(fd);
  return text;
}

}  // namespace wb::app
