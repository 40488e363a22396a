#include "safe_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <fmt/format.h>

namespace cuaudit {
namespace {

bool write_all(int fd, const std::string& contents) {
  for (size_t done = 0; done < contents.size();) {
    const ssize_t n = write(fd, contents.data() + done, contents.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

bool open_regular_file(const std::string& path, int& fd, size_t& size, std::string& error, Links links) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below.
  fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | (links == Links::Refuse ? O_NOFOLLOW : 0));
  if (fd < 0 && errno == ELOOP && links == Links::Refuse) {
    error = fmt::format("{} is a symbolic link, which a recorded run never holds; it was not read", path);
    return false;
  }
  if (fd < 0) {
    error = fmt::format("cannot read {}: {}", path, strerror(errno));
    return false;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    error = fmt::format("{} is not a regular file", path);
    close(fd);
    fd = -1;
    return false;
  }
  size = static_cast<size_t>(st.st_size);
  return true;
}

bool read_regular_file(const std::string& path, size_t max_bytes, std::string& out, std::string& error, Links links) {
  int fd = -1;
  size_t size = 0;
  if (!open_regular_file(path, fd, size, error, links)) return false;
  if (size > max_bytes) {
    error = fmt::format("{} is larger than {} bytes", path, max_bytes);
    close(fd);
    return false;
  }
  out.resize(size);
  size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = read(fd, out.data() + done, out.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      error = fmt::format("cannot read {}: {}", path, strerror(errno));
      close(fd);
      return false;
    }
    if (n == 0) break;  // the file shrank while it was read
    done += static_cast<size_t>(n);
  }
  out.resize(done);
  close(fd);
  return true;
}

namespace {
// Is `path` a regular file (not a link) holding exactly `contents`?
bool holds_exactly(const std::string& path, const std::string& contents) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || static_cast<size_t>(st.st_size) != contents.size())
    return false;
  std::string text, error;
  return read_regular_file(path, contents.size(), text, error) && text == contents;
}
}  // namespace

bool replace_file(const std::string& path, const std::string& contents, std::string& error) {
  // Unchanged, it is left alone: reading a run (cuaudit report) must not rewrite its caches.
  if (holds_exactly(path, contents)) return true;
  std::string temporary = path + ".XXXXXX";
  const int fd = mkstemp(temporary.data());  // a new file of our own: O_EXCL, never a planted link
  if (fd < 0) {
    error = fmt::format("cannot write {}: {}", path, strerror(errno));
    return false;
  }
  fchmod(fd, 0644);
  const bool written = write_all(fd, contents);
  const int saved = errno;
  if (close(fd) != 0 || !written) {
    error = fmt::format("cannot write {}: {}", path, strerror(written ? errno : saved));
    unlink(temporary.c_str());
    return false;
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    error = fmt::format("cannot replace {}: {}", path, strerror(errno));
    unlink(temporary.c_str());
    return false;
  }
  return true;
}

bool write_whole_file(const std::string& path, const std::string& contents, std::string& error) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    error = fmt::format("cannot write {}: {}", path, strerror(errno));
    return false;
  }
  const bool written = write_all(fd, contents);
  const int saved = errno;
  if (close(fd) != 0 || !written) {
    error = fmt::format("cannot write {}: {}", path, strerror(written ? errno : saved));
    return false;
  }
  return true;
}

}  // namespace cuaudit
