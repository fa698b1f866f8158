#!/bin/bash
set -e
cd /app
wc -l < /app/data.txt | tr -d ' ' > /app/count.txt
