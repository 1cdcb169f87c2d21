from django.urls import path

from .views import pages

urlpatterns = [
    path("", pages.home, name="home"),
    path("leaderboard/<int:pk>/", pages.leaderboard, name="leaderboard"),
    path("leaderboard/<int:pk>/knobs/", pages.knobs, name="knobs"),
    path("records/", pages.record_list, name="record_list"),
    path("records/<int:pk>/", pages.record_detail, name="record_detail"),
    path("diff/", pages.diff, name="diff"),
    path("compare/", pages.compare_devices, name="compare_devices"),
    path("compare/records/", pages.compare_records, name="compare_records"),
    path("roofline/", pages.roofline_page, name="roofline"),
    path("compare/<int:pk>/", pages.compare_workload, name="compare_workload"),
    path("speedups/", pages.speedups, name="speedups"),
    path("devices/", pages.devices, name="devices"),
    path("imports/", pages.batch_list, name="batch_list"),
    path("imports/<int:pk>/", pages.batch_detail, name="batch_detail"),
]
