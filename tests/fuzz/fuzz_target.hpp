// The libFuzzer entry point of fuzz_record.cpp, declared for the plain replay runner.
#pragma once

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);
