"""A program for `tracetop top` on a small screen: two hot functions whose names differ only at their end,
beyond what 80 columns show, and a thread named `sleeper` that sleeps (own time, and next to no CPU time).
It runs until a file named `stop` appears in the working directory."""
import os
import threading
import time


def render_invoice_line_item_with_discounts_total(n):
    total = 0
    for i in range(n):
        total += i * i
    return total


def render_invoice_line_item_with_discounts_taxes(n):
    total = 0
    for i in range(n):
        total += i * 3
    return total


def sleeper():
    while not os.path.exists("stop"):
        time.sleep(0.05)


thread = threading.Thread(target=sleeper, name="sleeper")
thread.start()
while not os.path.exists("stop"):
    render_invoice_line_item_with_discounts_total(20000)
    render_invoice_line_item_with_discounts_taxes(20000)
thread.join()
