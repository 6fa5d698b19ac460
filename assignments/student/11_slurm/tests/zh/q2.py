from otter.test_files import test_case

OK_FORMAT = False

name = "q2"
points = 2

@test_case(points=None, hidden=False)
def test_job_port(job_port):
    assert job_port(17) is not None, '返回了 None：把 ... 换成你的代码'
    assert job_port(17) == 20017, '作业 17'

