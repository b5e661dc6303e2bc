NAME = "unroll"
def run(graph):
    return False
