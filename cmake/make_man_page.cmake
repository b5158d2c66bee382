# Build step (cmake -P, from man_pages.cmake): the man page of PROGRAM, from its --help and --version,
# to OUTPUT. help2man reads them from a stand-in script that prints them adjusted to what help2man
# parses: "Usage:" (ours say "usage:"), and two spaces between an option and its text (ours have one
# after a long option). Defaults that describe the build machine are written as what they are: the
# host name (dde-activator's --name) in words, the build's bin folder as DDE_INSTALLED_BINDIR, which
# install_man_pages.cmake replaces with the installed one.
# Variables: HELP2MAN, PROGRAM, DESCRIPTION (the NAME line), OUTPUT.
foreach(flag help version)
  execute_process(COMMAND ${PROGRAM} --${flag} OUTPUT_VARIABLE ${flag} RESULT_VARIABLE status)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "${PROGRAM} --${flag} failed (${status})")
  endif()
endforeach()
string(REGEX REPLACE "^usage:" "Usage:" help "${help}")
string(REGEX REPLACE "\n(  --[a-z0-9-]+( [A-Z]+)?) ([^ A-Z])" "\n\\1  \\3" help "${help}")
cmake_host_system_information(RESULT host QUERY HOSTNAME)
string(REPLACE "(default: ${host})" "(default: the host name)" help "${help}")
get_filename_component(bin_dir ${PROGRAM} DIRECTORY)
file(REAL_PATH ${bin_dir} bin_dir)
string(REPLACE "${bin_dir}/" "DDE_INSTALLED_BINDIR/" help "${help}")

get_filename_component(name ${PROGRAM} NAME)
set(work ${OUTPUT}.d)
file(MAKE_DIRECTORY ${work})
file(WRITE ${work}/help.txt "${help}")
file(WRITE ${work}/version.txt "${version}")
file(WRITE ${work}/${name}
  "#!/bin/sh\nif [ \"$1\" = --help ]; then cat '${work}/help.txt'; else cat '${work}/version.txt'; fi\n")
file(CHMOD ${work}/${name} PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE)
execute_process(COMMAND ${HELP2MAN} --no-info --section=1 "--name=${DESCRIPTION}" --output=${OUTPUT} ${work}/${name}
  RESULT_VARIABLE status ERROR_VARIABLE errors)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "help2man ${PROGRAM} failed (${status}): ${errors}")
endif()
