// The unchecked-error decision on recorded machine code (x86-64, assembled with GNU as from the
// Intel-syntax text beside each): what the code at a call's return address does with eax.
#include <doctest/doctest.h>

#include <vector>

#include "error_findings.h"
#include "result_use.h"

using namespace cuaudit;

namespace {

struct Snippet {
  const char* text;
  std::vector<uint8_t> bytes;
  ResultUse expected;
};

const Snippet kSnippets[] = {
    {"test eax, eax; jne 1f; ret; 1: ret", {0x85, 0xc0, 0x75, 0x01, 0xc3, 0xc3}, ResultUse::Used},
    {"mov [rbp-4], eax; mov rax, [rbp-16]; ret", {0x89, 0x45, 0xfc, 0x48, 0x8b, 0x45, 0xf0, 0xc3}, ResultUse::Used},
    {"mov rax, [rbp-8]; mov rdi, rax; call f",
     {0x48, 0x8b, 0x45, 0xf8, 0x48, 0x89, 0xc7, 0xe8, 0xfb, 0x00, 0x00, 0x00},
     ResultUse::Discarded},
    {"xor eax, eax; pop rbp; ret", {0x31, 0xc0, 0x5d, 0xc3}, ResultUse::Discarded},
    {"mov edi, 5; call f", {0xbf, 0x05, 0x00, 0x00, 0x00, 0xe8, 0xfb, 0x00, 0x00, 0x00}, ResultUse::Discarded},
    {"leave; ret", {0xc9, 0xc3}, ResultUse::Returned},
    {"jmp 1f; nop; nop; 1: cmp eax, 0; ret", {0xeb, 0x02, 0x90, 0x90, 0x83, 0xf8, 0x00, 0xc3}, ResultUse::Used},
    {"je 1f; mov eax, 1; ret; 1: xor eax, eax; ret",
     {0x74, 0x06, 0xb8, 0x01, 0x00, 0x00, 0x00, 0xc3, 0x31, 0xc0, 0xc3},
     ResultUse::Discarded},
    {"je 1f; mov eax, 1; ret; 1: mov edi, eax; call f",
     {0x74, 0x06, 0xb8, 0x01, 0x00, 0x00, 0x00, 0xc3, 0x89, 0xc7, 0xe8, 0xfb, 0x00, 0x00, 0x00},
     ResultUse::Used},
    {"jmp rdx", {0xff, 0xe2}, ResultUse::Unknown},
    {"mov al, 1; ret", {0xb0, 0x01, 0xc3}, ResultUse::Unknown},
    {"1: add rbx, 1; cmp rbx, 10; jne 1b; xor eax, eax; ret",
     {0x48, 0x83, 0xc3, 0x01, 0x48, 0x83, 0xfb, 0x0a, 0x75, 0xf6, 0x31, 0xc0, 0xc3},
     ResultUse::Discarded},
    {"(bytes that are no instruction)", {0x0f, 0xff}, ResultUse::Unknown},
    {"nop; (the code ends here)", {0x90}, ResultUse::Unknown},
};

}  // namespace

TEST_CASE("what the code after a call does with eax, on recorded snippets") {
  for (const Snippet& s : kSnippets) {
    CAPTURE(s.text);
    CHECK(analyze_result_use(s.bytes.data(), s.bytes.size(), 0x401000, 0x401000) == s.expected);
  }
}

TEST_CASE("the decision rule: call site first, then the last-error functions, never a guess") {
  // Checked at the call site: handled, whatever else happened.
  CHECK(decide_error_handling(false, true, ResultUse::Used, false) == ErrorHandling::CheckedAtCallSite);
  CHECK(decide_error_handling(true, true, ResultUse::Used, false) == ErrorHandling::CheckedAtCallSite);
  // Discarded, but cudaGetLastError retrieved it before another error: handled.
  CHECK(decide_error_handling(false, true, ResultUse::Discarded, true) == ErrorHandling::RetrievedLater);
  CHECK(decide_error_handling(false, true, ResultUse::Discarded, false) == ErrorHandling::Unchecked);
  // Driver calls have no last error to retrieve.
  CHECK(decide_error_handling(false, false, ResultUse::Discarded, true) == ErrorHandling::Unchecked);
  // Launches: the last-error rule decides.
  CHECK(decide_error_handling(true, true, ResultUse::Discarded, true) == ErrorHandling::RetrievedLater);
  CHECK(decide_error_handling(true, true, ResultUse::Unknown, false) == ErrorHandling::Unchecked);
  // Undecidable machine code is never called unchecked.
  CHECK(decide_error_handling(false, true, ResultUse::Unknown, false) == ErrorHandling::Undecided);
  CHECK(decide_error_handling(false, false, ResultUse::Unknown, false) == ErrorHandling::Undecided);
}
