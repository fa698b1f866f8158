#!/bin/bash
set -e
cd /app
sed -i 's/return a - b/return a + b/' /app/calc.py
