#!/bin/bash
set -e
cd /app
sed -i 's/colour/color/g' /app/notes.txt
