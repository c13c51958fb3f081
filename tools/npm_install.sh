#!/bin/sh
# npm install --no-save in DIR from its package-lock.json, with HOME and TMPDIR pointed at a
# scratch folder of its own for the length of the install: an install script (opencode-ai's
# postinstall, say, which makes a folder `opencode` in the temporary folder) writes there, never
# in the real home or the shared /tmp, and the folder is removed after. npm's package cache
# stays where npm keeps it (`npm config get cache`), so a second install is as quick as before.
#     sh tools/npm_install.sh DIR
set -eu
dir=$1
cache=$(npm config get cache)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT INT TERM
mkdir "$scratch/tmp"
cd "$dir"
HOME="$scratch" XDG_CONFIG_HOME="$scratch/.config" XDG_DATA_HOME="$scratch/.local/share" \
	XDG_CACHE_HOME="$scratch/.cache" npm_config_cache="$cache" \
	TMPDIR="$scratch/tmp" TMP="$scratch/tmp" TEMP="$scratch/tmp" \
	npm install --no-save --silent --no-audit --no-fund
