#!/bin/bash
set -e
cd /app
grep -c ERROR /app/app.log > /app/errors.txt
