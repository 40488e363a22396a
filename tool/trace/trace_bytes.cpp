#include "trace_bytes.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "safe_file.h"
#include "trace_reader.h"

namespace cuaudit {

namespace {

class MemoryBytes : public TraceBytes {
 public:
  explicit MemoryBytes(std::string bytes) : bytes_(std::move(bytes)) {}
  size_t size() const override { return bytes_.size(); }
  const char* read(size_t offset, size_t) override { return bytes_.data() + offset; }

 private:
  std::string bytes_;
};

class FileBytes : public TraceBytes {
 public:
  explicit FileBytes(const std::string& path) : path_(path) {
    std::string error;
    // Regular files only: a trace replaced by a FIFO or a link to /dev/zero must not hang the report.
    if (!open_regular_file(path, fd_, size_, error)) throw TraceError(error);
    struct stat st;
    if (fstat(fd_, &st) == 0) device_ = st.st_dev, inode_ = st.st_ino;
  }
  ~FileBytes() override {
    if (fd_ >= 0) ::close(fd_);
  }
  size_t size() const override { return size_; }
  void rest() override {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  const char* read(size_t offset, size_t n) override {
    buffer_.resize(n);
    size_t done = 0;
    reopen();
    while (fd_ >= 0 && done < n) {
      const ssize_t got = pread(fd_, buffer_.data() + done, n - done, static_cast<off_t>(offset + done));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) break;  // the file shrank: what is missing reads as zeros, and fails its checksum
      done += static_cast<size_t>(got);
    }
    std::fill(buffer_.begin() + static_cast<std::ptrdiff_t>(done), buffer_.end(), '\0');
    return buffer_.data();
  }

 private:
  // The same file as when it was indexed, or none (its reads are zeros, which fail to parse).
  void reopen() {
    if (fd_ >= 0) return;
    std::string error;
    size_t size = 0;
    if (!open_regular_file(path_, fd_, size, error)) {
      fd_ = -1;
      return;
    }
    struct stat st;
    if (fstat(fd_, &st) != 0 || st.st_dev != device_ || st.st_ino != inode_) rest();
  }

  std::string path_;
  dev_t device_ = 0;
  ino_t inode_ = 0;
  int fd_ = -1;
  size_t size_ = 0;
  std::string buffer_;
};

}  // namespace

std::unique_ptr<TraceBytes> bytes_in_memory(std::string bytes) {
  return std::make_unique<MemoryBytes>(std::move(bytes));
}

std::unique_ptr<TraceBytes> bytes_of_file(const std::string& path) { return std::make_unique<FileBytes>(path); }

}  // namespace cuaudit
