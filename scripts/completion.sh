#!/bin/sh
# completion.sh — one program's completion script for one shell, from the
# built programs themselves (meson's completions/; installed by make install
# and the Debian package):  completion.sh SHELL PROG EXE > FILE
#   SHELL  bash, zsh or fish
#   PROG   gflow, gbatch, ... (run as EXE under that name) or gflowd
# `gflow completion SHELL` prints every client program's script: only
# PROG's own, the first, is kept. gflowd prints a bash-style script for zsh
# too (bashcompinit): it is wrapped here as a zsh completion function.
set -eu
shell=$1 prog=$2 exe=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
case $exe in /*) ;; *) exe=$PWD/$exe ;; esac
ln -s "$exe" "$tmp/$prog"

if [ "$prog" = gflowd ]; then
	case $shell in
	zsh)
		echo "#compdef gflowd"
		echo "# gflowd's bash-style completion (gflowd completion bash) through bashcompinit"
		echo "autoload -U bashcompinit && bashcompinit"
		out=$("$tmp/gflowd" completion bash)
		printf '%s\n' "$out" | sed 's/_gflowd/_gflowd_bash/g'
		echo '_bash_complete -F _gflowd_bash "$@"'
		;;
	*) "$tmp/gflowd" completion "$shell" ;;
	esac
	exit 0
fi
out=$("$tmp/$prog" completion "$shell")
printf '%s\n' "$out" | awk '/^(#compdef |# bash completion for |# fish completion for )/ { n++ } n < 2'
