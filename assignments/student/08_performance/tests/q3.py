from otter.test_files import test_case

OK_FORMAT = False

name = "q3"
points = 2

@test_case(points=None, hidden=False)
def test_accumulation(accumulation):
    assert accumulation(1024, 8, 2, 4) is not None, 'returns None: replace ... with your code'
    assert accumulation(1024, 8, 2, 4) == (64, 16), '8 examples × 2 replicas × 4 micro-batches'

