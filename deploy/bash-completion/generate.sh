#!/usr/bin/env bash
# Writes the bash completion of the snowid CLI from the CLI itself: the
# subcommands and options that `snowid [SUBCOMMAND...] --help` lists (CLI11's
# help), walked recursively, so the completion lists exactly what the binary
# accepts. Run at build time (cmake/Package.cmake):
#   generate.sh PATH/TO/snowid OUTPUT
set -euo pipefail
[ $# -eq 2 ] || {
  echo "usage: generate.sh SNOWID_BINARY OUTPUT" >&2
  exit 2
}
snowid=$1
output=$2

# help_words SUBCOMMAND...: "subcommands|options" of that command line.
help_words() {
  "$snowid" "$@" --help | awk '
    /^[A-Za-z][A-Za-z ]*:$/ { section = $0; next }   # "Options:", "Subcommands:", ...
    !/^  [^ ]/ { next }                               # wrapped descriptions, usage
    section == "Subcommands:" { subs = subs " " $1 }
    section == "Options:" {
      n = split($1, names, ",")
      for (i = 1; i <= n; i++) if (names[i] ~ /^-/) opts = opts " " names[i]
    }
    END { printf "%s|%s\n", substr(subs, 2), substr(opts, 2) }'
}

table=""
walk() {  # walk SUBCOMMAND...: one table row per command line, depth first
  local words subs opts sub
  words=$(help_words "$@")
  subs=${words%%|*}
  opts=${words#*|}
  table+="  [\"snowid${*:+ $*}\"]=\"${subs:+$subs }$opts\""$'\n'
  for sub in $subs; do walk "$@" "$sub"; done
}
walk

cat >"$output.tmp" <<EOF
# bash completion for snowid: its subcommands and their options. Generated at
# build time from \`snowid ... --help\` by deploy/bash-completion/generate.sh;
# do not edit.

# The words each command line takes, keyed by the command and its subcommands.
declare -gA _snowid_completion_words=(
$table)

_snowid() {
  local cur=\${COMP_WORDS[COMP_CWORD]} path=snowid word i
  # The subcommands typed so far; options and their values are skipped.
  for ((i = 1; i < COMP_CWORD; i++)); do
    word=\${COMP_WORDS[i]}
    [[ \$word == -* ]] && continue
    if [[ -n \${_snowid_completion_words["\$path \$word"]+set} ]]; then
      path="\$path \$word"
    fi
  done
  # shellcheck disable=SC2207 # the words hold no spaces or glob characters
  COMPREPLY=(\$(compgen -W "\${_snowid_completion_words[\$path]}" -- "\$cur"))
}
complete -F _snowid snowid
EOF
mv "$output.tmp" "$output"
