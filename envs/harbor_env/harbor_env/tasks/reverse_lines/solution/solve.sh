#!/bin/bash
set -e
cd /app
tac /app/poem.txt > /app/reversed.txt
