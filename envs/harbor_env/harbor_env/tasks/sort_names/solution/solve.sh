#!/bin/bash
set -e
cd /app
sort /app/names.txt > /app/sorted.txt
