import os

def fine(a):
    return a

class Half:
    def ok(self):
        return 1

    def broken(self
        return 2

def after():
    pass
