#!/bin/bash
set -e
cd /app
tail -n +2 /app/sales.csv | cut -d, -f2 | paste -sd+ | bc > /app/total.txt 2>/dev/null || python3 -c "import csv; print(sum(int(r['amount']) for r in csv.DictReader(open('/app/sales.csv'))))" > /app/total.txt
