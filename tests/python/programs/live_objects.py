"""A steady program that makes objects, to watch with `tracetop top` (key o) and the live page under
`tracetop run --live --objects`: churn() makes lists and dicts, most freed at once, some kept (so that the
number alive grows). It runs until a file named `stop` appears in the working directory."""
import os


def churn(kept):
    for i in range(2000):
        kept.append([i])
        {"i": i}
    del kept[:1500]


def main():
    kept = []
    while not os.path.exists("stop"):
        churn(kept)


main()
