// Reading and writing the files of a run directory as files received from elsewhere: only regular
// files are read (a FIFO would hang, /dev/zero would never end), with a size cap; caches and
// run.json are replaced through a new temporary file and rename, so a planted symlink is replaced,
// never written through; every write is checked once the file is closed (a full disk is an error).
#pragma once

#include <cstddef>
#include <string>

namespace cuaudit {

// Whether a symlink at the path itself is followed. A run directory's own side files (run.json, the
// caches, a framework's or the hooks' files, kept kernel code) are never links: one planted there
// would show the start of whatever it points to in a note (/etc/shadow's first byte), so it is not
// read. Traces and the files a user names are followed.
enum class Links { Follow, Refuse };

// Reads the regular file at `path` into `out`. False with `error` saying why: missing, a link
// (Links::Refuse), not a regular file, larger than `max_bytes`, unreadable.
bool read_regular_file(const std::string& path, size_t max_bytes, std::string& out, std::string& error,
                       Links links = Links::Follow);

// Opens the regular file at `path` for reading: its descriptor and its size now. False with `error`
// saying why, as read_regular_file.
bool open_regular_file(const std::string& path, int& fd, size_t& size, std::string& error, Links links = Links::Follow);

// Replaces the file at `path` with `contents`: written to a new file beside it, then renamed over it.
// A regular file that already holds exactly `contents` is left untouched (its time stamps too).
bool replace_file(const std::string& path, const std::string& contents, std::string& error);

// Writes `contents` to `path` (created or truncated) and checks every step, close included.
bool write_whole_file(const std::string& path, const std::string& contents, std::string& error);

}  // namespace cuaudit
