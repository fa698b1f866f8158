#!/bin/bash
set -e
cd /app
echo "Hello, world!" > /app/hello.txt
