#include "trace_bytes.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string_view>

#include "record_parser.h"
#include "run_dir.h"
#include "run_dir_layout.h"
#include "safe_file.h"
#include "trace_format.h"
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

// A compacted trace: the compacted file's bytes, then the trace's from `cut` on. A chunk never
// straddles the seam (the compacted file ends with a whole chunk, the trace goes on at one), but a
// damaged length may ask for bytes across it: those are copied together.
class CompactedBytes : public TraceBytes {
 public:
  CompactedBytes(std::unique_ptr<TraceBytes> compacted, std::unique_ptr<TraceBytes> trace, uint64_t cut)
      : compacted_(std::move(compacted)), trace_(std::move(trace)), cut_(cut), seam_(compacted_->size()) {}
  size_t size() const override { return seam_ + (trace_->size() - cut_); }
  void rest() override {
    compacted_->rest();
    trace_->rest();
  }
  size_t trace_offset(size_t offset) const override { return offset < seam_ ? 0 : offset - seam_ + cut_; }
  const char* read(size_t offset, size_t n) override {
    if (offset + n <= seam_) return compacted_->read(offset, n);
    if (offset >= seam_) return trace_->read(offset - seam_ + cut_, n);
    const size_t first = seam_ - offset;
    buffer_.assign(compacted_->read(offset, first), first);
    buffer_.append(trace_->read(cut_, n - first), n - first);
    return buffer_.data();
  }

 private:
  std::unique_ptr<TraceBytes> compacted_, trace_;
  uint64_t cut_;
  size_t seam_;
  std::string buffer_;
};

}  // namespace

std::string compacted_trace_path(const std::string& trace_path) {
  const size_t slash = trace_path.rfind('/');
  const size_t name_at = slash == std::string::npos ? 0 : slash + 1;
  const auto pid = pid_in_entry_name(trace_path.substr(name_at), run_dir::Trace);
  if (!pid) return {};
  return trace_path.substr(0, name_at) + run_dir::CompactedTrace.prefix + std::to_string(*pid) +
         run_dir::CompactedTrace.suffix;
}

namespace {

// Where the trace goes on after `compacted`, read from its CompactionRecord; 0 when `compacted` is
// not a compacted file of this trace.
uint64_t compacted_trace_cut(TraceBytes& compacted, TraceBytes& trace) {
  using namespace trace;
  if (trace.size() < sizeof(FileHeader) || compacted.size() < sizeof(FileHeader)) return 0;
  const auto header = load_unaligned<FileHeader>(trace.read(0, sizeof(FileHeader)));
  const size_t header_size = header.header_size;
  if (header.version < kFirstSealedVersion || header_size != file_header_size(header.version) ||
      compacted.size() < header_size + sizeof(ChunkHeader) + sizeof(CompactionRecord) || trace.size() < header_size)
    return 0;
  const std::string trace_header(trace.read(0, header_size), header_size);
  if (trace_header != std::string_view(compacted.read(0, header_size), header_size)) return 0;  // another trace's
  const auto chunk = load_unaligned<ChunkHeader>(compacted.read(header_size, sizeof(ChunkHeader)));
  if (chunk.magic != kChunkMagic || chunk.payload_bytes < sizeof(CompactionRecord) ||
      chunk.payload_bytes > compacted.size() - header_size - sizeof(ChunkHeader))
    return 0;
  const char* payload = compacted.read(header_size + sizeof(ChunkHeader), chunk.payload_bytes);
  const uint64_t nonce = load_unaligned<FileIdentity>(trace_header.data() + sizeof(FileHeader)).nonce;
  if (chunk_checksum(payload, chunk.payload_bytes, chunk_seal(header.version, header.pid, nonce, chunk.tid)) !=
      chunk.checksum)
    return 0;
  const auto record = load_unaligned<CompactionRecord>(payload);
  if (record.header.type != static_cast<uint16_t>(RecordType::Compaction) || record.cut < header_size ||
      record.cut > trace.size())
    return 0;
  return record.cut;
}

}  // namespace

CompactedBeginning compacted_beginning(const std::string& trace_path, TraceBytes& trace) {
  const std::string compacted_path = compacted_trace_path(trace_path);
  struct stat st;
  if (compacted_path.empty() || stat(compacted_path.c_str(), &st) != 0) return {};
  CompactedBeginning found;
  try {
    found.bytes = bytes_of_file(compacted_path);
  } catch (const TraceError&) {
    return {};
  }
  found.cut = compacted_trace_cut(*found.bytes, trace);
  if (!found.cut) return {};
  return found;
}

std::unique_ptr<TraceBytes> bytes_of_trace(const std::string& path) {
  auto trace = bytes_of_file(path);
  CompactedBeginning beginning = compacted_beginning(path, *trace);
  if (!beginning.cut) return trace;
  return std::make_unique<CompactedBytes>(std::move(beginning.bytes), std::move(trace), beginning.cut);
}

std::unique_ptr<TraceBytes> bytes_in_memory(std::string bytes) {
  return std::make_unique<MemoryBytes>(std::move(bytes));
}

std::unique_ptr<TraceBytes> bytes_of_file(const std::string& path) { return std::make_unique<FileBytes>(path); }

}  // namespace cuaudit
