#!/bin/bash
set -e
cd /app
tr ' ' '\n' < /app/words.txt | grep -v '^$' | sort -u > /app/unique.txt
