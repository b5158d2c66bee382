# Hardening flags for everything built here, as Debian builds its packages (dpkg-buildflags'
# "hardening=+all"; lintian's hardening-no-relro, -bindnow, -fortify-functions and -pie check the
# packaged binaries for them):
#   PIE         executables linked position-independent (CMAKE_POSITION_INDEPENDENT_CODE compiles so)
#   stack       -fstack-protector-strong, -fstack-clash-protection
#   relro, now  the GOT read-only after relocation, every symbol bound at start
#   fortify     _FORTIFY_SOURCE=2: checked memcpy, sprintf, read, ... where the size is known
# Fortify needs optimisation (glibc warns without it, and warnings are errors), so Debug builds go
# without. The sanitizer build (DDE_SANITIZE, deploy/sanitize.sh) goes without it too: the fortified
# __memcpy_chk and friends bypass ASan's interceptors, so ASan would miss the overflows it is for.
include(CheckPIESupported)
check_pie_supported(LANGUAGES C CXX)

add_compile_options(-fstack-protector-strong -fstack-clash-protection)
add_link_options(LINKER:-z,relro LINKER:-z,now)
if(NOT DDE_SANITIZE)
  # -U first: a compiler that defines it already (Ubuntu's gcc does) would warn of a redefinition.
  add_compile_options("$<$<NOT:$<CONFIG:Debug>>:-U_FORTIFY_SOURCE;-D_FORTIFY_SOURCE=2>")
endif()
