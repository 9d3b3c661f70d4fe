#!/bin/sh
# Print the text of a PDF (an illustration for the pdf-processing skill).
echo "would extract the text of $1"
