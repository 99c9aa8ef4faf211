# cmake -DREADELF=<readelf> -DFILE=<ELF program or library> -P check_stack.cmake
# Fails unless FILE's GNU_STACK program header says read-write, not executable.
execute_process(COMMAND ${READELF} -lW ${FILE} RESULT_VARIABLE rc OUTPUT_VARIABLE headers)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${READELF} -lW ${FILE} failed (${rc})")
endif()
string(REGEX MATCH "GNU_STACK[^\n]*" stack "${headers}")
if(NOT stack)
  message(FATAL_ERROR "${FILE} has no GNU_STACK header: its stack is executable")
endif()
# The flags, then the alignment (0x10 from ld.bfd, 0 from lld).
if(NOT stack MATCHES " RW +(0x[0-9a-f]+|0)$")
  message(FATAL_ERROR "${FILE}: the stack is not read-write only: ${stack}")
endif()
message(STATUS "${FILE}: ${stack}")
