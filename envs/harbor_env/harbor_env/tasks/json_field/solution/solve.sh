#!/bin/bash
set -e
cd /app
python3 -c "import json; print(json.load(open('/app/config.json'))['database']['port'])" > /app/port.txt
