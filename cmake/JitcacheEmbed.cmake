# jitcache_embed_packages(TARGET <target> PACKAGES <file>...)
#
# Links jitcache package files (cuda-sm_90.jcpkg, ...) into <target>, an executable, a shared or
# module library, or an object library, that links jitcache (the shared jitcache::jitcache or the
# static libraries of a jitcache built in-tree). Before main() (or when the library is loaded),
# a constructor registers each package through jitcache_register_embedded_package() under its
# file name, and a Cache created later serves builds from them (the "embedded" tier) without
# touching the filesystem.
#
# The bytes go in through the assembler (.incbin of the file, in .rodata, 64-byte aligned), never
# through the compiler as a C array: a package of many megabytes costs the build nothing. A
# changed package file re-assembles the target's objects. A package may be the OUTPUT of an
# add_custom_command() of the same directory (pass its absolute path); relative paths are taken
# from the current source directory. Each call adds to what earlier calls embedded.
#
# Needs an ELF platform (Linux) and the ASM language, which is enabled here when the call is made
# at the top level of the directory that defines <target>; elsewhere, enable it there first
# (project(... LANGUAGES C CXX ASM) or enable_language(ASM)). A static library cannot be
# <target>: the linker would drop the registering object, which nothing references; embed the
# packages into the executable or shared library that links the static library instead.
include_guard(GLOBAL)

# enable_language() sets its variables in the scope it runs in, and a macro runs in its caller's:
# called at the top level of the target's directory, that is the scope the target is generated
# from. Inside a function it would vanish at the function's end, so it is left to the caller.
macro(jitcache_embed_packages)
  if(NOT DEFINED CMAKE_ASM_COMPILE_OBJECT AND NOT DEFINED CMAKE_CURRENT_FUNCTION)
    enable_language(ASM)
  endif()
  _jitcache_embed_packages(${ARGV})
endmacro()

# Whether LANGUAGE can be compiled in the directory that defines target (its compile rule is set
# there).
function(_jitcache_embed_language_enabled target language out)
  get_target_property(target_dir ${target} SOURCE_DIR)
  if(target_dir STREQUAL CMAKE_CURRENT_SOURCE_DIR)
    set(rule "${CMAKE_${language}_COMPILE_OBJECT}")
  else()
    get_directory_property(rule DIRECTORY "${target_dir}" DEFINITION CMAKE_${language}_COMPILE_OBJECT)
  endif()
  if(rule)
    set(${out} TRUE PARENT_SCOPE)
  else()
    set(${out} FALSE PARENT_SCOPE)
  endif()
endfunction()

# TEXT as the body of a string literal of C and of the GNU assembler.
function(_jitcache_embed_quote text out)
  string(REPLACE "\\" "\\\\" text "${text}")
  string(REPLACE "\"" "\\\"" text "${text}")
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

function(_jitcache_embed_packages)
  cmake_parse_arguments(PARSE_ARGV 0 ARG "" "TARGET" "PACKAGES")
  set(fn "jitcache_embed_packages")
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "${fn}: unexpected arguments '${ARG_UNPARSED_ARGUMENTS}' "
                        "(usage: ${fn}(TARGET <target> PACKAGES <file>...))")
  endif()
  if(NOT ARG_TARGET)
    message(FATAL_ERROR "${fn}: no TARGET given (usage: ${fn}(TARGET <target> PACKAGES <file>...))")
  endif()
  if(NOT TARGET ${ARG_TARGET})
    message(FATAL_ERROR "${fn}: TARGET '${ARG_TARGET}' is not a target defined so far")
  endif()
  if(NOT ARG_PACKAGES)
    message(FATAL_ERROR "${fn}: no PACKAGES given for target '${ARG_TARGET}'")
  endif()
  get_target_property(type ${ARG_TARGET} TYPE)
  if(NOT type MATCHES "^(EXECUTABLE|SHARED_LIBRARY|MODULE_LIBRARY|OBJECT_LIBRARY)$")
    message(FATAL_ERROR "${fn}: TARGET '${ARG_TARGET}' is a ${type}; embed the packages into an "
                        "executable or a shared library (from a static library, the linker drops "
                        "the object that registers them)")
  endif()
  get_target_property(imported ${ARG_TARGET} IMPORTED)
  if(imported)
    message(FATAL_ERROR "${fn}: TARGET '${ARG_TARGET}' is imported; it is built elsewhere")
  endif()
  _jitcache_embed_language_enabled(${ARG_TARGET} ASM asm_enabled)
  if(NOT asm_enabled)
    message(FATAL_ERROR "${fn}: the ASM language is not enabled where '${ARG_TARGET}' is defined; "
                        "add ASM to that directory's project(... LANGUAGES ...) or call "
                        "enable_language(ASM) at its top level")
  endif()

  # Each call gets its own files and symbols: a target may embed packages in several calls.
  get_target_property(call ${ARG_TARGET} JITCACHE_EMBED_CALLS)
  if(NOT call)
    set(call 0)
  endif()
  math(EXPR next "${call} + 1")
  set_target_properties(${ARG_TARGET} PROPERTIES JITCACHE_EMBED_CALLS ${next})
  get_target_property(names ${ARG_TARGET} JITCACHE_EMBED_NAMES)
  if(NOT names)
    set(names "")
  endif()

  get_target_property(binary_dir ${ARG_TARGET} BINARY_DIR)
  string(MAKE_C_IDENTIFIER "${ARG_TARGET}" target_id)
  set(out_dir "${binary_dir}/jitcache_embed/${target_id}")
  set(prefix "jitcache_embedded_${target_id}_${call}")
  set(declarations "")
  set(registrations "")
  set(sources "")
  set(index 0)
  foreach(package IN LISTS ARG_PACKAGES)
    get_filename_component(path "${package}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    get_source_file_property(generated "${path}" TARGET_DIRECTORY ${ARG_TARGET} GENERATED)
    if(IS_DIRECTORY "${path}")
      message(FATAL_ERROR "${fn}: package '${path}' (target '${ARG_TARGET}') is a directory")
    endif()
    if(NOT EXISTS "${path}" AND NOT generated)
      message(FATAL_ERROR "${fn}: package file '${path}' (target '${ARG_TARGET}') does not exist "
                          "and no add_custom_command() of this directory makes it")
    endif()
    get_filename_component(name "${path}" NAME)
    if(name IN_LIST names)
      message(FATAL_ERROR "${fn}: target '${ARG_TARGET}' embeds two packages named '${name}'; "
                          "a package is known by its file name")
    endif()
    list(APPEND names "${name}")

    set(symbol "${prefix}_${index}")
    _jitcache_embed_quote("${path}" quoted_path)
    _jitcache_embed_quote("${name}" quoted_name)
    # .hidden: the symbols link the two generated files together and stay out of a shared
    # library's exports. The GNU-stack note keeps the program's stack non-executable (an object
    # without it makes the linker assume it needs an executable stack).
    set(asm "${out_dir}/${symbol}.S")
    file(CONFIGURE OUTPUT "${asm}" @ONLY CONTENT [=[
/* Generated by jitcache_embed_packages() from @quoted_path@. */
    .section .rodata
    .balign 64
    .globl @symbol@_begin
    .hidden @symbol@_begin
    .type @symbol@_begin, %object
@symbol@_begin:
    .incbin "@quoted_path@"
    .globl @symbol@_end
    .hidden @symbol@_end
@symbol@_end:
    .size @symbol@_begin, @symbol@_end - @symbol@_begin
    .section .note.GNU-stack,"",%progbits
]=])
    set_source_files_properties("${asm}" TARGET_DIRECTORY ${ARG_TARGET} PROPERTIES
                                LANGUAGE ASM OBJECT_DEPENDS "${path}")
    string(APPEND declarations
           "extern const unsigned char ${symbol}_begin[] JITCACHE_EMBEDDED_SYMBOL;\n"
           "extern const unsigned char ${symbol}_end[] JITCACHE_EMBEDDED_SYMBOL;\n")
    string(APPEND registrations
           "  jitcache_register_embedded_package(\"${quoted_name}\", ${symbol}_begin,\n"
           "                                     (size_t)(${symbol}_end - ${symbol}_begin));\n")
    # The package itself is a source too (not compiled): a package made by a custom command of
    # this directory is then made before the target's objects.
    list(APPEND sources "${asm}" "${path}")
    math(EXPR index "${index} + 1")
  endforeach()
  set_target_properties(${ARG_TARGET} PROPERTIES JITCACHE_EMBED_NAMES "${names}")

  # The registering constructor is C, or C++ where the target's directory has no C compiler.
  _jitcache_embed_language_enabled(${ARG_TARGET} C c_enabled)
  if(c_enabled)
    set(registrar "${out_dir}/${prefix}.c")
  else()
    set(registrar "${out_dir}/${prefix}.cpp")
  endif()
  file(CONFIGURE OUTPUT "${registrar}" @ONLY CONTENT [=[
/* Generated by jitcache_embed_packages(): registers the packages linked into this program. */
#include <jitcache/embed.h>

#define JITCACHE_EMBEDDED_SYMBOL __attribute__((visibility("hidden")))
#ifdef __cplusplus
extern "C" {
#endif
@declarations@#ifdef __cplusplus
}
#endif

__attribute__((constructor)) static void @prefix@_register(void) {
@registrations@}
]=])
  target_sources(${ARG_TARGET} PRIVATE ${sources} "${registrar}")
endfunction()
